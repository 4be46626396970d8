/* tmplsrc_hook.h - forced into emit.c by the build (-include), so that the emitter opens its
 * templates through fg_tmplsrc_fopen (see tmplsrc.h). It changes nothing for a template
 * folder on disk. */
#ifndef FUSEGEN_TMPLSRC_HOOK_H
#define FUSEGEN_TMPLSRC_HOOK_H
#include <stdio.h>

#include "tmplsrc.h"

#define fopen fg_tmplsrc_fopen

#endif
