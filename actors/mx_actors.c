/*  The pipeline actors control starts once the instance is active, in
    start order (see docs/architecture.md for the full graph).  */
#include "mx_actor.h"

const mx_actor_def_t mx_pipeline_actors [] = {
    { NULL, NULL }
};
const size_t mx_pipeline_actor_count = 0;
