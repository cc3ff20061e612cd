#!/bin/sh
# Run one Criterion test program with its report in TAP, so that automake's
# summary counts every test case.  Criterion writes TAP to stderr for "-".
prog="$1"
shift
exec "$prog" --tap=- "$@" 2>&1
