/* What the parts of the calibration share (the library's interface: calib.h). The parts are
 *   calib.c        test names, the data, reading benchmark outputs, writing the profile
 *   calib_stats.c  robust statistics: locations, weighted line fits, piecewise segments
 *   calib_fit.c    the fit of the model's costs (cal_fit_run) and the sizes to measure next
 * Functions shared between the parts carry the prefix cal_ (as the library's own). */
#ifndef MPISIM_CALIB_INTERNAL_H
#define MPISIM_CALIB_INTERNAL_H

#include "calib.h"

#include <stddef.h>

/* calib.c */
void cal_set_err(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* calib_stats.c */
double cal_median(const double *v, int n);
void cal_wls(const double *x, const double *y, const double *w, int n, int nonneg, double *a, double *b);

#endif
