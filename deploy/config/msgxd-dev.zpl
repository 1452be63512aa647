#   msgxd configuration - development sample
#
#   Run: msgxd --config deploy/config/msgxd-dev.zpl
#   Format: ZPL (czmq zconfig). Sections nest by 4 spaces; the same key may
#   also be written flat (msgx.pipeline.claim-batch = 50) or as a path
#   (msgx/pipeline/claim-batch = 50). Quote values that contain '#'.
#   Every key can be overridden from the environment: upper-case, dots and
#   dashes as '_' (MSGX_PIPELINE_CLAIM_BATCH=100). Unknown keys are errors.
#   Durations: 500ms, 30s, 10m, 2h, 30d; a bare number only in "-ms" keys.
#   Write an empty value as "" when a comment follows it on the line.
#   Values below are the defaults unless marked "dev:".

msgx
    profile = dev                           # dev or prod
    stubs = false                           # in-memory stand-ins; refused in prod
    log
        level = info                        # debug, info, warn, error

    pg
        conninfo = "host=127.0.0.1 dbname=msgx"    # libpq conninfo of our own database
        statement-timeout = 30s             # statement_timeout of every session
    instance
        lock-key = 0x6d7367786c6f636b       # advisory lock of the active instance
        standby-retry = 1s                  # standby retries the lock this often

    pipeline
        autostart = true                    # dev: start ingress and pump at once (default false)
        poll-interval = 1s                  # mailbox poll period
        claim-batch = 50                    # mailbox rows per poll
        max-attempts = 5                    # processing attempts before DEAD(EXHAUSTED)
        backoff-ms = 1000,2000,4000,8000,16000    # retry delays; the last repeats
        backoff-cap-ms = 60000              # upper bound of a retry delay
        head-deadline = 10m                 # FAILED head older than this becomes DEAD(EXHAUSTED)
        max-commit-delay = 5m               # a hole in mailbox IDs is released after this
        overdue-backfill = 30d              # R: owed processed marks are forced after this (floor 1d)
        backfill-period = 30s               # backfill sweep period
        backfill-batch = 100                # rows per backfill sweep
        backfill-max-attempts = 20          # then the mark is abandoned (EXHAUSTED)
        backfill-backoff = 30s              # first backfill retry delay, doubling
        backfill-backoff-cap = 15m          # upper bound of the backfill retry delay
        delivery-batch = 100                # KAFKA:msg events per delivery batch
        delivery-drain-rounds = 10          # delivery batches per wake-up
        process-batch = 500                 # messages applied in one transaction, a savepoint each
        cutover-watermark = ""              # empty = no seeding; min, zero, max or an ID
        late-detect-period = 0              # late-arrival check of released holes; 0 = off
        late-detect-batch = 100             # released holes per late-arrival round
        ignore-types = LDM,REGN,RSTA,EROR   # TYPEs that end as SKIPPED(ignored:TYPE)

    operation-day
        zone = Asia/Shanghai                # airport time zone
        cutoff-hour = 0                     # local hour at which the operation day starts
    identity
        include-day-boundary = false        # never change once in service
    codec
        max-message-bytes = 16777216        # larger raw messages are MALFORMED
    schd
        flush-period = 3s                   # KAFKA:schd aggregation period
        flush-limit = 500                   # flights per KAFKA:schd flush
    health
        backlog-cache-ttl-ms = 30000        # backlog snapshot for /health and /metrics

    history
        history-store-enabled = false       # false: the history sweep deletes nothing
        run-at = 03:30                      # local time of the daily history sweep
        retention-days = 7                  # operation days kept live
        quiet-days = 2                      # days without change before a flight moves
        snap-log-retention-days = 90        # schd_snap_log rows kept
    archive
        after-days = 30                     # terminal proc_state rows move to proc_state_hst
    shadow = false                          # true: never write to shared mailbox tables

    requests
        timeout = 10m                       # open requests expire after this
        daily-schedule-at = ""              # local HH:MM of a daily RQFD; empty = off

    kafka
        bootstrap-servers = ""              # dev: empty = embedded mock cluster
        topic
            msg = msgx.flight.events        # KAFKA:msg events
            schd = msgx.flight.state        # KAFKA:schd latest state (log-compacted)
        acks = all                          # must stay all
        enable-idempotence = true           # must stay true
        max-in-flight = 5                   # 1..5
        linger-ms = 5                       # producer linger
        delivery-timeout = 30s              # delivery report arrives within this
    delivery
        max-attempts = 10                   # delivery attempts before an event stays DEAD
        backoff = 1s,5s,30s,1m              # delivery retry delays; the last repeats

    http
        bind = 127.0.0.1:8080               # compat entry, /health, /metrics
        max-body-bytes = 16777216           # larger bodies get 413
    admin
        endpoint = ipc://msgx-admin.sock    # msgxctl endpoint (working directory)

mailbox
    shared-mysql
        enabled = false                     # dev: no shared mailbox; ingress and backfill off
        host = 127.0.0.1
        port = 3306
        user = ""
        password = ""
        database = aodbinterface
        socket = ""                         # Unix socket instead of host:port when set
        connect-timeout = 5s                # whole seconds
        read-timeout = 30s
        write-timeout = 30s
        time-zone = +08:00                  # session time zone of the mailbox DATETIME columns
    processed-value = PROCESSED             # processed mark written into CMINMSGS
    outbound
        routing-rqfd = MSGXRQFD             # COUTMSGS ROUTINGID of schedule requests
        routing-rqrd = MSGXRQRD             # COUTMSGS ROUTINGID of reference requests
