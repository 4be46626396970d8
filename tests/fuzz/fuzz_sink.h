/* fuzz_sink.h - where the generator's fuzz entry points (fuzz_spec.c, fuzz_tuning_gen.c) send the
 * diagnostics they format: the formatting is under test, the text is thrown away. */
#ifndef FUSEGEN_FUZZ_SINK_H
#define FUSEGEN_FUZZ_SINK_H

#include <stdio.h>
#include <stdlib.h>

/* /dev/null, opened once; who names the fuzz target in the message if it cannot be. */
static FILE *fuzz_sink(const char *who)
{
    static FILE *sink;
    if (!sink) {
        sink = fopen("/dev/null", "w");
        if (!sink) {
            fprintf(stderr, "%s: cannot open /dev/null\n", who);
            abort();
        }
    }
    return sink;
}

#endif
