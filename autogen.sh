#!/bin/sh
# Regenerate the build system: autoreconf, plus automake's TAP driver,
# which the test suite uses and autoreconf does not copy on its own.
set -e
cd "$(dirname "$0")"
mkdir -p build-aux m4
autoreconf -fi
cp -f "$(automake --print-libdir)/tap-driver.sh" build-aux/
