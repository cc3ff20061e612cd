dnl SPDX-License-Identifier: BSD-2-Clause
dnl The verbs provider needs libibverbs and librdmacm (Debian: libibverbs-dev,
dnl librdmacm-dev).  Without them it is left out and the summary says why.
AC_DEFUN([WEFT_PROV_VERBS_CONFIGURE], [
	AC_ARG_ENABLE([verbs],
		[AS_HELP_STRING([--disable-verbs], [leave out the verbs provider])],
		[], [enable_verbs=auto])
	weft_have_verbs=no
	weft_verbs_msg="no (disabled)"
	AS_IF([test "$enable_verbs" != no], [
		weft_verbs_libs_ok=yes
		AC_CHECK_HEADER([infiniband/verbs.h], [], [weft_verbs_libs_ok="no (install libibverbs-dev)"])
		AS_IF([test "$weft_verbs_libs_ok" = yes],
			[AC_CHECK_HEADER([rdma/rdma_cma.h], [], [weft_verbs_libs_ok="no (install librdmacm-dev)"])])
		AS_IF([test "$weft_verbs_libs_ok" = yes],
			[AC_CHECK_LIB([ibverbs], [ibv_open_device], [:], [weft_verbs_libs_ok="no (install libibverbs-dev)"])])
		AS_IF([test "$weft_verbs_libs_ok" = yes],
			[AC_CHECK_LIB([rdmacm], [rdma_create_id], [:], [weft_verbs_libs_ok="no (install librdmacm-dev)"])])
		AS_IF([test "$weft_verbs_libs_ok" = yes],
			[weft_have_verbs=yes
			 weft_verbs_msg=yes
			 VERBS_LIBS="-lrdmacm -libverbs"],
			[weft_verbs_msg="$weft_verbs_libs_ok"
			 AS_IF([test "$enable_verbs" = yes], [AC_MSG_ERROR([verbs requested but $weft_verbs_libs_ok])])])
	])
	AC_SUBST([VERBS_LIBS])
	AM_CONDITIONAL([HAVE_VERBS], [test "$weft_have_verbs" = yes])
])
