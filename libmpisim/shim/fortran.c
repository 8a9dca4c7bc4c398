/* Support of the generated Fortran bindings: Open MPI's Fortran sentinels and its own bindings.
 * Open MPI defines MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS(ES)_IGNORE, MPI_UNWEIGHTED and
 * MPI_WEIGHTS_EMPTY for Fortran as common blocks whose addresses are the sentinels; they live in
 * libmpi (or, by copy relocation, in the program), so the addresses taken here are the ones the
 * program passes. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include "fortran.h"
#include "shim.h"

_Static_assert(sizeof(MPI_Fint) == sizeof(int), "Fortran INTEGER arrays are passed to C as int arrays");

extern int mpi_fortran_bottom_, mpi_fortran_in_place_, mpi_fortran_unweighted_, mpi_fortran_weights_empty_;
extern MPI_Fint mpi_fortran_status_ignore_, mpi_fortran_statuses_ignore_;

void *ms_f_buf(void *p)
{
    if (p == (void *)&mpi_fortran_bottom_) return MPI_BOTTOM;
    if (p == (void *)&mpi_fortran_in_place_) return MPI_IN_PLACE;
    return p;
}

const int *ms_f_weights(const MPI_Fint *p)
{
    if (p == (const MPI_Fint *)&mpi_fortran_unweighted_) return MPI_UNWEIGHTED;
    if (p == (const MPI_Fint *)&mpi_fortran_weights_empty_) return MPI_WEIGHTS_EMPTY;
    return p;
}

int ms_f_status_ignored(const MPI_Fint *s)
{
    return s == &mpi_fortran_status_ignore_ || s == MPI_F_STATUS_IGNORE;
}

int ms_f_statuses_ignored(const MPI_Fint *s)
{
    return s == &mpi_fortran_statuses_ignore_ || s == MPI_F_STATUSES_IGNORE;
}

void *ms_f_real(const char *sym, const char *fn)
{
    void *p = dlsym(RTLD_NEXT, sym);
    if (!p) ms_fatal("%s from Fortran: Open MPI's Fortran binding %s was not found", fn, sym);
    return p;
}

int ms_f_neighbor_count(MPI_Comm comm, int out)
{
    int in = 0, o = 0;
    ms_topo_degrees(comm, &in, &o);
    return out ? o : in;
}
