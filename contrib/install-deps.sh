#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Install what building and testing weft needs on Debian 12 (bookworm).
# libfabric-dev brings the OFI headers weft implements; its libfabric1 and
# libfabric-bin come along and serve only as the reference that tests and
# benchmarks compare against: weft never links them.
# tests/vm (make check-vm) boots Debian's kernel in QEMU with soft-RDMA
# devices: QEMU, the RDMA user tools, and xz and gcc-12 (build-essential)
# to unpack the kernel and build siw.ko; it downloads the kernel packages.
# tests/mpi (make check-mpi) runs Open MPI's mpirun and mpicc over weft;
# util-linux's unshare gives each namespace host its own hostname.
# make fuzz builds libFuzzer harnesses with clang; libFuzzer's runtime is
# in libclang-rt-14-dev, which clang only recommends.
set -e
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
	build-essential autoconf automake libtool pkg-config binutils \
	libfabric-dev libfabric1 libfabric-bin \
	libhwloc-dev libibverbs-dev librdmacm-dev rdma-core ibverbs-providers \
	libcriterion-dev gnuplot-nox man-db git iproute2 procps \
	qemu-system-x86 ibverbs-utils rdmacm-utils perftest xz-utils \
	openmpi-bin libopenmpi-dev util-linux clang libclang-rt-14-dev \
	>/dev/null
echo "weft: build and test dependencies installed"
