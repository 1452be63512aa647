/*  mx_lifecycle - the states of an inbound message and the classes of its
    errors (SPEC §3.3). Pure names: the domain decides outcomes with them,
    the proc_state repository stores them.
*/
#ifndef MX_LIFECYCLE_H_INCLUDED
#define MX_LIFECYCLE_H_INCLUDED

typedef enum {
    MX_STATE_PENDING, MX_STATE_FAILED, MX_STATE_SUCCEEDED, MX_STATE_SKIPPED, MX_STATE_DEAD
} mx_state_t;

typedef enum {
    MX_ERR_NONE, MX_ERR_MALFORMED, MX_ERR_PROTOCOL, MX_ERR_CODEC_ERROR,
    MX_ERR_UNSUPPORTED, MX_ERR_INFRA, MX_ERR_EXHAUSTED
} mx_error_class_t;

//  "PENDING" .. "DEAD".
const char *mx_state_name (mx_state_t state);
//  -1 for a name not in the list.
int mx_state_lookup (const char *name);
//  NULL for MX_ERR_NONE, else "MALFORMED" .. "EXHAUSTED".
const char *mx_error_class_name (mx_error_class_t error_class);
//  MX_ERR_NONE for an unknown name.
mx_error_class_t mx_error_class_lookup (const char *name);

#endif
