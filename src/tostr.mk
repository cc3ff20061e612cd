# src/tostr.c, src/strerror.c tests
