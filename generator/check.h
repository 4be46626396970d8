/* check.h - meaning of a parsed spec: ranges, names, cross-field rules. Reports every
 * problem (not only the first) at its JSON pointer. Needs no GPU and no templates. */
#ifndef FUSEGEN_CHECK_H
#define FUSEGEN_CHECK_H
#include "diag.h"
#include "spec.h"

/* Returns the number of errors reported (0: the spec is valid and plan may run). */
int fg_check_spec(const fg_spec *spec, fg_diag *d);

/* The rules for a library written to files (the command line; the JIT keeps its code in memory):
 * its header <library>.h must not shadow another header on its users' include path, nor its
 * <library>_library redeclare a runtime name. Returns the number of errors reported. */
int fg_check_library_files(const fg_spec *spec, fg_diag *d);

#endif
