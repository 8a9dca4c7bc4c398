/* Private to the handlers of modelled MPI calls (handlers*.c): what their files share (prefix mh_,
 * hidden inside libmpisim.so). */
#ifndef MS_HANDLERS_INTERNAL_H
#define MS_HANDLERS_INTERNAL_H

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "shim.h"

#define type_bytes ms_type_bytes
#define give_handle ms_give_handle

/* handlers.c */
MS_HIDDEN void mh_copy_status(MPI_Status *dst, const MPI_Status *src);
MS_HIDDEN void mh_empty_status(MPI_Status *st);
MS_HIDDEN int mh_finish(ms_rq *r, MPI_Status *status);
MS_HIDDEN ms_rq *mh_target_of(MPI_Request h, ms_rq **owner, const char *call);

/* handlers_coll.c */
MS_HIDDEN ms_rq *mh_coll_rq(MPI_Comm comm);
MS_HIDDEN int mh_comm_size_of(MPI_Comm comm);
MS_HIDDEN int mh_comm_rank_of(MPI_Comm comm);

#endif
