#   msgxd configuration - production sample
#
#   Run: msgxd --config /etc/msgx/msgxd.zpl
#   Replace every placeholder (example.internal, CHANGE-ME) before use.
#   Keep this file mode 0600: it holds the mailbox password. Secrets may
#   instead come from the environment (MAILBOX_SHARED_MYSQL_PASSWORD) and
#   PostgreSQL passwords from ~/.pgpass (PGPASSFILE).
#   Format: ZPL (czmq zconfig). Sections nest by 4 spaces; the same key may
#   also be written flat (msgx.pipeline.claim-batch = 50) or as a path
#   (msgx/pipeline/claim-batch = 50). Quote values that contain '#'.
#   Write an empty value as "" when a comment follows it on the line.
#   Environment overrides: upper-case, dots and dashes as '_'.
#   prod refuses: stubs, an empty msgx.kafka.bootstrap-servers (the mock
#   cluster is dev only), weakened Kafka producer safety.

msgx
    profile = prod
    stubs = false                           # refused in prod
    log
        level = info                        # debug, info, warn, error

    pg
        conninfo = "host=pg.example.internal port=5432 dbname=msgx user=msgx sslmode=require connect_timeout=10 keepalives=1"
        statement-timeout = 30s
    instance
        lock-key = 0x6d7367786c6f636b       # the same on every instance of one database
        standby-retry = 1s                  # a standby takes over within about this

    pipeline
        autostart = true                    # false: start paused until msgxctl resume
        poll-interval = 1s
        claim-batch = 50
        max-attempts = 5
        backoff-ms = 1000,2000,4000,8000,16000
        backoff-cap-ms = 60000
        head-deadline = 10m
        max-commit-delay = 5m               # hole release age; agree it with the mailbox owner
        overdue-backfill = 30d              # R; floor 1d; never lower it for speed
        backfill-period = 30s
        backfill-batch = 100
        backfill-max-attempts = 20
        backfill-backoff = 30s
        backfill-backoff-cap = 15m
        delivery-batch = 100
        delivery-drain-rounds = 10
        process-batch = 500                 # messages applied in one transaction, a savepoint each
        cutover-watermark = ""              # set once for the first start (min, zero, max, ID)
        late-detect-period = 5m             # watch released holes for late commits
        late-detect-batch = 100
        ignore-types = LDM,REGN,RSTA,EROR

    operation-day
        zone = Asia/Shanghai
        cutoff-hour = 0
    identity
        include-day-boundary = false        # never change once in service
    codec
        max-message-bytes = 16777216
    schd
        flush-period = 3s
        flush-limit = 500
    health
        backlog-cache-ttl-ms = 30000

    history
        history-store-enabled = true
        run-at = 03:30
        retention-days = 7
        quiet-days = 2
        snap-log-retention-days = 90
    archive
        after-days = 30
    shadow = false                          # true on a shadow instance: no mailbox writes

    requests
        timeout = 10m
        daily-schedule-at = 02:00           # daily RQFD; empty = off

    kafka
        bootstrap-servers = kafka-1.example.internal:9092,kafka-2.example.internal:9092,kafka-3.example.internal:9092
        topic
            msg = msgx.flight.events
            schd = msgx.flight.state        # create it log-compacted
        acks = all                          # must stay all
        enable-idempotence = true           # must stay true
        max-in-flight = 5                   # 1..5
        linger-ms = 5
        delivery-timeout = 30s
    delivery
        max-attempts = 10                   # then the event stays DEAD (dead-letter record)
        backoff = 1s,5s,30s,1m              # delivery retry delays; the last repeats

    http
        bind = 0.0.0.0:8080                 # compat entry, /health, /metrics
        max-body-bytes = 16777216
    admin
        endpoint = ipc:///run/msgx/admin.sock    # mode 0600; msgxctl --endpoint

mailbox
    shared-mysql
        enabled = true
        host = aodb-mysql.example.internal
        port = 3306
        user = msgx
        password = "CHANGE-ME"
        database = aodbinterface
        socket = ""
        connect-timeout = 5s
        read-timeout = 30s
        write-timeout = 30s
        time-zone = +08:00                  # session time zone of the mailbox DATETIME columns
    processed-value = PROCESSED             # a value the mailbox owner accepts
    outbound
        routing-rqfd = MSGXRQFD
        routing-rqrd = MSGXRQRD
