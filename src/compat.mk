# src/compat.c tests
