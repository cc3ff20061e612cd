/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * weft/client-node.h: the programs built in this tree bind fi_getinfo,
 * fi_dupinfo and fi_freeinfo at the symbol version node of the OFI headers
 * they are compiled with, as they would when linked against the libfabric
 * those headers came with.
 *
 * weft's libfabric.so.1 makes FABRIC_1.9 (2.5 and later) the default, as
 * upstream's newest release does.  A program compiled against 1.17 headers
 * and linked against weft would bind FABRIC_1.9: it could not run over
 * libfabric 1.17 (the tests run the same binaries over both), and weft
 * would read its 192-byte domain_attr as a 224-byte one in fi_dupinfo.
 *
 * The build gives every program in the tree this header (-include) and
 * WEFT_CLIENT_NODE, the node configure found for the headers (FABRIC_1.3
 * for 1.9 to 1.19, 1.7 for 1.20 to 1.22, 1.8 for 2.0 to 2.4, nothing for
 * the default).  It includes nothing, so a source's own feature macros
 * (_GNU_SOURCE) still come first.  The library itself and the programs
 * that link the core statically (unit tests, fuzz replayers:
 * WEFT_CORE_STATIC) do not bind.
 */
#ifndef WEFT_CLIENT_NODE_H
#define WEFT_CLIENT_NODE_H

#if defined(WEFT_CLIENT_NODE) && !defined(WEFT_CORE_STATIC)
__asm__(".symver fi_getinfo,fi_getinfo@" WEFT_CLIENT_NODE);
__asm__(".symver fi_dupinfo,fi_dupinfo@" WEFT_CLIENT_NODE);
__asm__(".symver fi_freeinfo,fi_freeinfo@" WEFT_CLIENT_NODE);
#endif

#endif /* WEFT_CLIENT_NODE_H */
