/*  The actors of msgxd in start order, stopped in reverse: the service
    actors first (control starts them at once, on a standby too), then the
    pipeline (once the instance is active). See docs/architecture.md.  */
#include "mx_actor.h"
#include "mx_aggregator.h"
#include "mx_control.h"
#include "mx_backfill_actor.h"
#include "mx_delivery.h"
#include "mx_dispatcher.h"
#include "mx_http.h"
#include "mx_inbox.h"
#include "mx_ingress.h"
#include "mx_jobs_actor.h"
#include "mx_log.h"
#include "mx_mailbox.h"
#include "mx_metrics_actor.h"
#include "mx_processor.h"
#include "mx_pump.h"
#include "mx_republish_actor.h"
#include "mx_requests_actor.h"
#include "mx_version.h"

const mx_actor_def_t mx_pipeline_actors [] = {
    //  Services: /health and /metrics answer on every instance.
    { "metrics", mx_metrics_actor, false },
    { "http", mx_http_actor, false },
    //  The processor binds the data socket the pump connects to.
    { "processor", mx_processor_actor, true },
    { "pump", mx_pump_actor, true },
    { "ingress", mx_ingress_actor, true },
    { "requests", mx_requests_actor, true },
    { "backfill", mx_backfill_actor, true },
    { "jobs", mx_jobs_actor, false },
    { "dispatcher", mx_dispatcher_actor, false },
    { MX_REF_DISPATCHER, mx_dispatcher_actor, false },
    { "schd-aggregator", mx_aggregator_actor, false },
    { "republisher", mx_republish_actor, false },
};
const size_t mx_pipeline_actor_count = sizeof mx_pipeline_actors / sizeof mx_pipeline_actors [0];

bool
mx_actor_is_service (const mx_actor_def_t *def)
{
    return def->fn == mx_metrics_actor || def->fn == mx_http_actor;
}

void
mx_actors_register_metrics (void)
{
    //  Always 1: the version and commit ride in the labels, so a dashboard
    //  can tell which build each instance runs.
    mx_metrics_gauge_set (mx_metrics_gauge ("msgx_build_info", "Version and git commit of this msgxd",
                                            "version=" MX_VERSION ",commit=" MX_COMMIT), 1);
    mx_ingress_polls ();
    mx_ingress_hole_aged_out ();
    mx_ingress_late_arrival ();
    for (int failure = MX_MAILBOX_FAILURE_CONNECT; failure < MX_MAILBOX_FAILURE_COUNT; failure++)
        mx_inbox_failures (mx_mailbox_failure_name ((mx_mailbox_failure_t) failure));
    mx_delivery_register_metrics ("KAFKA:msg");
    mx_delivery_register_metrics ("KAFKA:schd");
    mx_delivery_register_metrics ("KAFKA:ref");
    mx_republish_events ("KAFKA:schd");
    mx_republish_events ("KAFKA:ref");
    mx_metrics_gauge_set (mx_republish_remaining (), 0);
    mx_processor_register_metrics ();
    mx_requests_register_metrics ();
    mx_control_register_metrics ();
    mx_pump_crash_loop ();
    mx_log_dropped_metric ();
    mx_http_register_metrics ();
    mx_control_admin_dropped ();
}
