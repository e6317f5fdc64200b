/* metrics: the Prometheus text file for node_exporter's textfile collector,
 * and the --status summary read back from it. */
#pragma once
#include <stdio.h>

#include "config.h"
#include "engine.h"

/* Writes the metrics text of everything since start to f. */
void metrics_format(FILE *f, const struct engine *e, enum khugepaged_mode mode);

/* Writes path atomically (temporary file in the same directory, fsync,
 * rename), mode 0644. Returns 0 or -errno; "" means no metrics file. */
int metrics_write(const char *path, const struct engine *e, enum khugepaged_mode mode);

/* Prints a readable summary of a metrics file. Returns 0 or -errno. */
int metrics_print_status(FILE *out, const char *path);
