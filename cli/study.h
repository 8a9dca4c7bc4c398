/* Studies: `mpisim study NAME` runs a program many times under `mpisim run` and tabulates. */
#ifndef MPISIM_STUDY_H
#define MPISIM_STUDY_H
#include "netmodel.h"

int mpisim_study_main(int argc, char **argv);
/* `mpisim calibrate` (calibrate.c) */
int mpisim_calibrate_main(int argc, char **argv);
const char *mpisim_profile_path(void);
/* Directory of the running mpisim executable (where the programs are; ../lib has the shim). */
int mpisim_self_dir(char *out, size_t len);
/* the shim, and a study program (matmul, ...), found relative to the command (build tree or
 * installed tree); -1 if absent */
int mpisim_find_shim(char *out, size_t len);
int mpisim_find_program(const char *name, char *out, size_t len);
/* a file or folder of the data directory (share/mpisim: configs, results) */
int mpisim_find_data(const char *name, char *out, size_t len);
nm_config *mpisim_load_config(const char *profile, const char **sets, int nsets, char *err, size_t errlen);

#endif
