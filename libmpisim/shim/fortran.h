/* Helpers of the generated Fortran bindings (fortran_gen.c, from gen_fortran.py). */
#ifndef MS_FORTRAN_H
#define MS_FORTRAN_H
#include <mpi.h>

/* MPI_STATUS_SIZE: a Fortran status is the C status as an array of MPI_Fint */
#define ms_f_status_size (sizeof(MPI_Status) / sizeof(MPI_Fint))

/* Fortran's MPI_BOTTOM and MPI_IN_PLACE are addresses of Open MPI's common blocks */
void *ms_f_buf(void *p);
const int *ms_f_weights(const MPI_Fint *p);   /* MPI_UNWEIGHTED, MPI_WEIGHTS_EMPTY */
int ms_f_status_ignored(const MPI_Fint *s);
int ms_f_statuses_ignored(const MPI_Fint *s);
/* neighbours of comm's process topology: destinations (out = 1) or sources (out = 0) */
int ms_f_neighbor_count(MPI_Comm comm, int out);
/* Open MPI's own Fortran binding `sym` of the C function `fn`; stops the run if it is absent */
void *ms_f_real(const char *sym, const char *fn);

#endif
