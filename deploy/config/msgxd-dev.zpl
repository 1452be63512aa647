#   msgxd configuration: development sample
#
#   Generated from core/mx_config.def by `msgxd --config-sample dev`
#   (the copy in the source tree is refreshed by the build, never edited).
#   The package installs the prod sample as /etc/msgxd/msgxd.zpl (a
#   conffile: your changes survive upgrades); change what your site needs.
#
#   Format: ZPL (czmq zconfig), sections nested by 4 spaces. A key may also
#   be written flat (msgx.pipeline.claim-batch = 50). Quote values holding
#   blanks or '#'; write an empty value as "". Unknown keys are refused.
#   Precedence: defaults < this file < environment (the key upper-cased,
#   dots and dashes as '_': MSGX_PIPELINE_CLAIM_BATCH=100).
#   Check before starting: msgxd --config FILE --check-config (exit 78 and
#   one line per problem when something is wrong).
#
#   Development: Kafka is librdkafka's in-process mock cluster (its address
#   is logged) and the shared mailbox is off until enabled below.

msgx
    #   dev or prod; prod refuses stubs and the embedded Kafka mock cluster.
    #   Text; default dev; environment MSGX_PROFILE.
    #   prod on every production and staging host; dev only on a workstation.
    profile = dev

    #   in-memory stand-ins for external systems; dev only, refused in prod.
    #   True or false; default false; environment MSGX_STUBS.
    #   Leave false. Only for development without servers.
    stubs = false

    log
        #   lowest log level written: debug, info, warn or error; reloadable
        #   (SIGHUP), and per actor at runtime with msgxctl log-level.
        #   Text; default info; environment MSGX_LOG_LEVEL.
        #   info in service; debug for a short while to follow one problem
        #   (several lines per message). Change it without a restart: edit it
        #   here and systemctl reload msgxd, or for one actor msgxctl log-level
        #   debug processor (until the next reload or restart).
        level = info

    pg
        #   libpq conninfo of msgexchange's own database.
        #   Text; default host=127.0.0.1 dbname=msgx; environment
        #   MSGX_PG_CONNINFO.
        #   msgexchange's own database, never the mailbox. Keep the password out
        #   of this file: put it in a pgpass file (the systemd unit sets
        #   PGPASSFILE=/etc/msgxd/pgpass), or give the whole value from a file
        #   (conninfo-file, MSGX_PG_CONNINFO_FILE) or in MSGX_PG_CONNINFO. prod
        #   needs sslmode=verify-full (or verify-ca) with sslrootcert. msgxd
        #   adds connect_timeout=5 and TCP keepalives unless set here.
        conninfo = "host=127.0.0.1 dbname=msgx"

        #   prod: accept a conninfo whose sslmode does not verify the server
        #   (below verify-ca).
        #   True or false; default false; environment MSGX_PG_ALLOW_UNVERIFIED.
        #   Leave false: prod then refuses a conninfo below sslmode=verify-ca
        #   (PGSSLMODE counts when the conninfo sets none). true only where
        #   PostgreSQL is reached over a network you trust; every start logs a
        #   warning.
        allow-unverified = false

        #   PostgreSQL statement_timeout for every session.
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 30s; environment
        #   MSGX_PG_STATEMENT_TIMEOUT.
        #   Raise only if a legitimate statement (history sweep, archive) is
        #   cancelled with 'statement timeout' in the log; a hung database must
        #   still end as a counted failure.
        statement-timeout = 30s

    instance
        #   PostgreSQL advisory lock key held by the active instance.
        #   Integer; default 0x6d7367786c6f636b; environment
        #   MSGX_INSTANCE_LOCK_KEY.
        #   Same value on the active and the standby of one database. Change it
        #   only if another application uses this advisory lock key, and then on
        #   every instance at once.
        lock-key = 0x6d7367786c6f636b

        #   how often a standby instance retries taking the lock.
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 1s; environment
        #   MSGX_INSTANCE_STANDBY_RETRY.
        #   How often an instance that cannot reach PostgreSQL or the lock tries
        #   again; failover takes about this long once the active instance's
        #   session is gone.
        standby-retry = 1s

    pipeline
        #   false: ingress and pump start paused until msgxctl resume.
        #   True or false; default false; environment MSGX_PIPELINE_AUTOSTART.
        #   false keeps ingress and pump paused after every start until msgxctl
        #   resume: use it for the first start and for a cutover. true in normal
        #   service, so a restart or a standby takeover resumes by itself.
        #   This sample: start processing at once.
        autostart = true

        #   mailbox poll period when idle (polls again at once while a batch was
        #   full).
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 1s; environment
        #   MSGX_PIPELINE_POLL_INTERVAL.
        #   The idle pace: while rows keep arriving ingress polls every
        #   poll-fast, so this bounds only the wait of a row after a quiet spell
        #   and the idle load on both databases (one read of each per poll). A
        #   full batch polls again at once, so it does not limit catch-up speed.
        poll-interval = 1s

        #   mailbox poll period while rows keep arriving (at most
        #   poll-interval); doubles after each poll that admits nothing, up to
        #   poll-interval.
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 10ms; environment
        #   MSGX_PIPELINE_POLL_FAST.
        #   Bounds how long a row waits to be seen while traffic flows (5 ms on
        #   average at 10ms). Raise (e.g. 50ms) to spare the mailbox server
        #   under steady light traffic; it never polls faster than
        #   poll-interval.
        poll-fast = 10ms

        #   mailbox rows read per poll.
        #   Integer; default 50; environment MSGX_PIPELINE_CLAIM_BATCH.
        #   Raise (200 to 1000) to catch up a large backlog faster.
        claim-batch = 50

        #   processing attempts before DEAD(EXHAUSTED).
        #   Integer; default 5; environment MSGX_PIPELINE_MAX_ATTEMPTS.
        #   With backoff-ms it bounds how long one failing message holds the
        #   FIFO (every message behind it waits). Raise it when dependency
        #   outages are longer than the backoff covers; DEAD(EXHAUSTED) messages
        #   can be replayed.
        max-attempts = 5

        #   retry delays after attempt 1, 2, ...; the last one repeats.
        #   Comma-separated durations; default 1000,2000,4000,8000,16000;
        #   environment MSGX_PIPELINE_BACKOFF_MS.
        #   Defaults give about 31 s from the first failure to DEAD(EXHAUSTED).
        backoff-ms = 1000,2000,4000,8000,16000

        #   upper bound of any retry delay.
        #   Duration (500ms, 30s, 10m, 2h, 30d; a bare number is ms); default
        #   60000; environment MSGX_PIPELINE_BACKOFF_CAP_MS.
        #   Only matters when backoff-ms holds longer delays; rarely changed.
        backoff-cap-ms = 60000

        #   a FAILED head older than this since its first processing becomes
        #   DEAD(EXHAUSTED).
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 10m; environment
        #   MSGX_PIPELINE_HEAD_DEADLINE.
        #   Longest time one message may hold the FIFO head, whatever attempts
        #   remain. Lower it when a blocked FIFO costs more than a replay; raise
        #   it for long planned outages.
        head-deadline = 10m

        #   a head started this many times without an outcome (the process died
        #   or hung on it) becomes DEAD(EXHAUSTED) crash-loop.
        #   Integer; default 3; environment MSGX_PIPELINE_CRASH_LOOP_STARTS.
        #   Each count is one death of msgxd (a crash, a kill, the watchdog)
        #   with the message in hand. Keep it below the supervisor's start limit
        #   (systemd StartLimitBurst, 5 in the shipped unit), or the unit gives
        #   up before the message is quarantined.
        crash-loop-starts = 3

        #   longest one PROCESS (a message or its batch) may take; past it msgxd
        #   exits for its supervisor to restart it.
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 60s; environment
        #   MSGX_PIPELINE_MESSAGE_DEADLINE.
        #   Well above the slowest healthy batch (a full process-batch takes
        #   about a second); a hang past it makes msgxd exit for its supervisor.
        #   Raise it with process-batch or statement-timeout.
        message-deadline = 60s

        #   age after which a hole in the mailbox IDs is released.
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 5m; environment
        #   MSGX_PIPELINE_MAX_COMMIT_DELAY.
        #   Must exceed the mailbox's longest delay between allocating an ID and
        #   committing its row: agree it with the mailbox owner. A row committed
        #   after its hole was released is only detected (late-detect-period),
        #   never processed. Never lower it for speed.
        max-commit-delay = 5m

        #   R: a processed mark still owed this long after receipt is forced
        #   (floor 1d).
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 30d; environment
        #   MSGX_PIPELINE_OVERDUE_BACKFILL.
        #   Keep it below the mailbox owner's retention of processed rows. Never
        #   lower it for speed.
        overdue-backfill = 30d

        #   backfill sweep period.
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 30s; environment
        #   MSGX_PIPELINE_BACKFILL_PERIOD.
        #   Marks are first tried at once; the sweep only catches up after
        #   mailbox failures.
        backfill-period = 30s

        #   rows per backfill round (a processing batch's marks, a sweep).
        #   Integer; default 2000; environment MSGX_PIPELINE_BACKFILL_BATCH.
        #   As large as msgx.pipeline.process-batch, a processing batch's marks
        #   take one round (64 marks to a mailbox transaction). Raise to catch
        #   up faster after a long mailbox outage.
        backfill-batch = 2000

        #   backfill attempts before a mark is abandoned (EXHAUSTED).
        #   Integer; default 20; environment
        #   MSGX_PIPELINE_BACKFILL_MAX_ATTEMPTS.
        #   With the default backoff 20 attempts cover about 4 hours of mailbox
        #   trouble; abandoned marks show in msgx_pipeline_backfill_abandoned
        #   and need msgxctl backfill recover.
        backfill-max-attempts = 20

        #   first backfill retry delay; doubles per attempt.
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 30s; environment
        #   MSGX_PIPELINE_BACKFILL_BACKOFF.
        #   Rarely changed.
        backfill-backoff = 30s

        #   upper bound of the backfill retry delay.
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 15m; environment
        #   MSGX_PIPELINE_BACKFILL_BACKOFF_CAP.
        #   Rarely changed; must not be below backfill-backoff.
        backfill-backoff-cap = 15m

        #   KAFKA:msg events per delivery batch.
        #   Integer; default 2000; environment MSGX_PIPELINE_DELIVERY_BATCH.
        #   As large as msgx.pipeline.process-batch, delivery keeps pace with a
        #   draining backlog (at 100 it fell behind and cost a third more
        #   database time per message). Raise when the brokers are far away;
        #   lower it with process-batch.
        delivery-batch = 2000

        #   delivery batches per wake-up.
        #   Integer; default 10; environment
        #   MSGX_PIPELINE_DELIVERY_DRAIN_ROUNDS.
        #   Raise together with delivery-batch to drain a large outbox faster.
        delivery-drain-rounds = 10

        #   consecutive ready messages applied in one PostgreSQL transaction,
        #   each in its own savepoint (1 = one at a time).
        #   Integer; default 2000; environment MSGX_PIPELINE_PROCESS_BATCH.
        #   Only a backlog fills a batch (a batch of 2000 takes about a third of
        #   a second); lower it (e.g. 50) if long transactions hurt other users
        #   of the database, 1 to rule batching out while diagnosing. At most
        #   10000.
        process-batch = 2000

        #   raw text bytes a processing batch (and its read-ahead) holds at
        #   most; a message larger than this goes alone.
        #   Integer, bytes; default 4194304; environment
        #   MSGX_PIPELINE_BATCH_BYTES.
        #   Bounds the processor's memory: a batch and its read-ahead hold at
        #   most this much raw text (their decoded state is a few times less).
        #   Raise only with memory to spare and large messages.
        batch-bytes = 4194304

        #   one-time seeding of a fresh instance: empty (none), min, zero, max
        #   or a mailbox ID.
        #   Text; default empty; environment MSGX_PIPELINE_CUTOVER_WATERMARK.
        #   Set it only for the first start of a fresh instance, then empty it
        #   again: min = every row now in the mailbox, zero = from ID 1 with the
        #   hole rules, max = only rows arriving from now on, an ID = rows above
        #   it. Refused once the instance has processed anything; msgxctl
        #   cutover does the same at run time.
        cutover-watermark = ""

        #   late-arrival check of released holes; 0 = off.
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 0; environment
        #   MSGX_PIPELINE_LATE_DETECT_PERIOD.
        #   5m in production: a hit means the mailbox committed a row after its
        #   hole was released (raise max-commit-delay and talk to the mailbox
        #   owner).
        late-detect-period = 0

        #   released holes re-checked per late-arrival round.
        #   Integer; default 100; environment MSGX_PIPELINE_LATE_DETECT_BATCH.
        #   Rarely changed.
        late-detect-batch = 100

        #   mailbox IDs a late-arrival round reads at most, in pages; a released
        #   hole with more goes on where it stopped.
        #   Integer; default 10000; environment MSGX_PIPELINE_LATE_DETECT_IDS.
        #   Bounds one round's mailbox reads (pages of 256 IDs); every ID of
        #   every released hole is still covered, a wide one over several
        #   rounds. Rarely changed.
        late-detect-ids = 10000

        #   how long a compressed copy of each processed message's raw text is
        #   kept in PostgreSQL; 0 = none.
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 7d; environment
        #   MSGX_PIPELINE_RAW_RETENTION.
        #   Long enough to repeat any replay, shadow run or comparison you may
        #   need (7d covers a week of cutover work); each message costs about
        #   its compressed size (docs/performance.md).
        raw-retention = 7d

        #   message TYPEs that end as SKIPPED(ignored:TYPE).
        #   Comma-separated words; default LDM,REGN,RSTA,EROR; environment
        #   MSGX_PIPELINE_IGNORE_TYPES.
        #   Change only with the integration team: a listed type never reaches
        #   Kafka.
        ignore-types = LDM,REGN,RSTA,EROR

    operation-day
        #   airport time zone (a name under /usr/share/zoneinfo).
        #   Text; default Asia/Shanghai; environment MSGX_OPERATION_DAY_ZONE.
        #   The airport's zone. Set it before the first message; changing it
        #   later moves flights between operation days.
        zone = Asia/Shanghai

        #   local hour (0..23) at which the operation day starts.
        #   Integer, hour of the day; default 0; environment
        #   MSGX_OPERATION_DAY_CUTOFF_HOUR.
        #   The AODB's own operation-day convention; set it before the first
        #   message.
        cutoff-hour = 0

    identity
        #   append the local DTTM date to the business identity; never change in
        #   service.
        #   True or false; default false; environment
        #   MSGX_IDENTITY_INCLUDE_DAY_BOUNDARY.
        #   Part of the deduplication identity: decide before the first message.
        #   Changing it in service lets duplicates through or skips messages.
        include-day-boundary = false

    codec
        #   larger raw messages are MALFORMED.
        #   Integer, bytes; default 16777216; environment
        #   MSGX_CODEC_MAX_MESSAGE_BYTES.
        #   Raise only if legitimate schedule snapshots are larger.
        max-message-bytes = 16777216

        #   most attributes on one element.
        #   Integer; default 64; environment MSGX_CODEC_MAX_ATTRIBUTES.
        #   Real SIS elements carry at most 3; libxml2 compares attributes
        #   pairwise, so keep it low.
        max-attributes = 64

        #   most nodes in a message: elements, attributes, text pieces,
        #   comments, processing instructions.
        #   Integer; default 4000000; environment MSGX_CODEC_MAX_NODES.
        #   A 2,000-flight DNLD has about 224,000 nodes (0.13 per byte); raise
        #   with max-message-bytes only.
        max-nodes = 4000000

        #   most elements nested in one another (at most 256).
        #   Integer; default 32; environment MSGX_CODEC_MAX_DEPTH.
        #   SIS messages nest 5 deep.
        max-depth = 32

        #   most text runs, CDATA sections, comments and processing instructions
        #   in a row between two tags.
        #   Integer; default 64; environment MSGX_CODEC_MAX_TEXT_PIECES.
        #   Real values are one piece of text, two with a comment.
        max-text-pieces = 64

        #   longest element or attribute name, bytes (at most 50000).
        #   Integer; default 256; environment MSGX_CODEC_MAX_NAME_LENGTH.
        #   SIS names are 4 characters; the longest seen (an xsi: attribute) is
        #   29.
        max-name-length = 256

        #   most namespace declarations (xmlns attributes) in a message.
        #   Integer; default 32; environment MSGX_CODEC_MAX_NAMESPACES.
        #   Real messages declare at most one namespace.
        max-namespaces = 32

        #   most distinct element and attribute names in a message.
        #   Integer; default 2048; environment MSGX_CODEC_MAX_DISTINCT_NAMES.
        #   Real messages use about 50 names; unknown elements are kept, so
        #   leave room.
        max-distinct-names = 2048

    schd
        #   KAFKA:schd aggregation period.
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 3s; environment
        #   MSGX_SCHD_FLUSH_PERIOD.
        #   Lower for fresher state on the latest-state topic at the cost of
        #   more Kafka traffic.
        flush-period = 3s

        #   flights per KAFKA:schd flush.
        #   Integer; default 500; environment MSGX_SCHD_FLUSH_LIMIT.
        #   Raise if the latest-state topic falls behind after a large schedule
        #   download.
        flush-limit = 500

    health
        #   lifetime of the backlog snapshot shared by /health and /metrics; 0 =
        #   no cache.
        #   Duration (500ms, 30s, 10m, 2h, 30d; a bare number is ms); default
        #   30000; environment MSGX_HEALTH_BACKLOG_CACHE_TTL_MS.
        #   The backlog is one aggregate query over proc_state; the cache keeps
        #   frequent scrapes off the database. 0 only while diagnosing.
        backlog-cache-ttl-ms = 30000

    history
        #   false: the history sweep deletes nothing.
        #   True or false; default false; environment
        #   MSGX_HISTORY_HISTORY_STORE_ENABLED.
        #   true in production so old flights move to the history tables; false
        #   keeps every flight live.
        history-store-enabled = false

        #   local time (HH:MM) after which the daily history sweep runs.
        #   Local time HH:MM in the airport zone, or empty; default 03:30;
        #   environment MSGX_HISTORY_RUN_AT.
        #   A quiet hour at the airport.
        run-at = 03:30

        #   flights whose operation day is older than this may move to history.
        #   Integer, days; default 7; environment MSGX_HISTORY_RETENTION_DAYS.
        #   Raise if readers of msgexchange's database need older flights live.
        retention-days = 7

        #   days without change before a flight never deleted may move to
        #   history.
        #   Integer, days; default 2; environment MSGX_HISTORY_QUIET_DAYS.
        #   Rarely changed.
        quiet-days = 2

        #   schd_snap_log rows older than this are deleted.
        #   Integer, days; default 90; environment
        #   MSGX_HISTORY_SNAP_LOG_RETENTION_DAYS.
        #   Lower only to save space.
        snap-log-retention-days = 90

    outbox
        #   how long a delivered (SENT) event stays in the outbox before the
        #   jobs actor deletes it; 0 = kept for ever.
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 7d; environment
        #   MSGX_OUTBOX_RETENTION.
        #   Delivered events are kept this long for msgxctl show and for
        #   forensics; DEAD and PENDING events are never deleted, whatever their
        #   age. The outbox holds about retention x events a day (two a flight
        #   change) at some 2 KB each (docs/operations.md).
        retention = 7d

        #   how often the jobs actor deletes the delivered events older than
        #   msgx.outbox.retention.
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 10m; environment
        #   MSGX_OUTBOX_PURGE_PERIOD.
        #   Rarely changed: each pass deletes in transactions of 500 rows.
        purge-period = 10m

    archive
        #   terminal proc_state rows older than this with a settled mark move to
        #   proc_state_hst.
        #   Integer, days; default 30; environment MSGX_ARCHIVE_AFTER_DAYS.
        #   A message can only be replayed while its row is live: raise it if
        #   operators replay older messages.
        after-days = 30

    #   true: never write to any shared mailbox table.
    #   True or false; default false; environment MSGX_SHADOW.
    #   true on a shadow instance that reads the production mailbox beside the
    #   live system: it writes no mark, no compat row and no request.
    shadow = false

    #   shadow mode: appended to both Kafka topic names, so nothing reaches the
    #   production topics.
    #   Text; default .shadow; environment MSGX_SHADOW_TOPIC_SUFFIX.
    #   Keep the default unless the shadow topics need another name; never empty
    #   on a shadow instance (it would publish to the production topics, which
    #   msgxd refuses).
    shadow-topic-suffix = .shadow

    #   shadow mode: false publishes nothing at all (the events stay PENDING in
    #   the instance's own outbox).
    #   True or false; default true; environment MSGX_SHADOW_PUBLISH.
    #   false when the shadow run is compared from the database alone and no
    #   topic should be written.
    shadow-publish = true

    requests
        #   an open request without answer expires after this.
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 10m; environment
        #   MSGX_REQUESTS_TIMEOUT.
        #   Match the upstream's usual answer time for schedule and reference
        #   requests.
        timeout = 10m

        #   local time (HH:MM) of a daily RQFD; empty = off.
        #   Local time HH:MM in the airport zone, or empty; default empty;
        #   environment MSGX_REQUESTS_DAILY_SCHEDULE_AT.
        #   A daily schedule request (RQFD) that resynchronises the schedule;
        #   set it once agreed with the AODB team.
        daily-schedule-at = ""

    kafka
        #   Kafka brokers host:port,...; empty = embedded mock cluster (dev
        #   only).
        #   Text; default empty; environment MSGX_KAFKA_BOOTSTRAP_SERVERS.
        #   Two or three brokers of the cluster. Empty is refused in prod; in
        #   dev it starts the in-process mock cluster.
        bootstrap-servers = ""

        topic
            #   topic of KAFKA:msg events.
            #   Text; default msgx.flight.events; environment
            #   MSGX_KAFKA_TOPIC_MSG.
            #   Change only together with the consumers; create the topic first
            #   when auto-creation is off.
            msg = msgx.flight.events

            #   topic of KAFKA:schd latest states (log-compacted).
            #   Text; default msgx.flight.state; environment
            #   MSGX_KAFKA_TOPIC_SCHD.
            #   Create it with cleanup.policy=compact; change only together with
            #   the consumers.
            schd = msgx.flight.state

            #   topic of KAFKA:ref reference entries, key LIST:KEY
            #   (log-compacted).
            #   Text; default msgx.reference; environment
            #   MSGX_KAFKA_TOPIC_REFERENCE.
            #   Create it with cleanup.policy=compact; change only together with
            #   the consumers.
            reference = msgx.reference

        #   producer acks; must be all (or -1).
        #   Text; default all; environment MSGX_KAFKA_ACKS.
        #   Not tunable: anything but all is refused.
        acks = all

        #   idempotent producer; must be true.
        #   True or false; default true; environment
        #   MSGX_KAFKA_ENABLE_IDEMPOTENCE.
        #   Not tunable: false is refused.
        enable-idempotence = true

        #   max.in.flight.requests.per.connection; 1..5.
        #   Integer; default 5; environment MSGX_KAFKA_MAX_IN_FLIGHT.
        #   5 is fastest; idempotence keeps the order. Above 5 is refused.
        max-in-flight = 5

        #   producer linger.ms.
        #   Duration (500ms, 30s, 10m, 2h, 30d; a bare number is ms); default 5;
        #   environment MSGX_KAFKA_LINGER_MS.
        #   Raise (10 to 50) for throughput over a slow link; 0 for the lowest
        #   latency.
        linger-ms = 5

        #   producer delivery.timeout.ms: a report arrives within this.
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 30s; environment
        #   MSGX_KAFKA_DELIVERY_TIMEOUT.
        #   Raise if broker fail-overs (leader elections) take longer.
        delivery-timeout = 30s

        security
            #   plaintext, ssl, sasl_plaintext or sasl_ssl; prod refuses the
            #   unencrypted ones without allow-plaintext.
            #   Text; default plaintext; environment
            #   MSGX_KAFKA_SECURITY_PROTOCOL.
            #   sasl_ssl or ssl in production (prod refuses the unencrypted ones
            #   unless allow-plaintext). With sasl_ssl set sasl.mechanisms,
            #   sasl.username and the password (from a file:
            #   sasl.password-file).
            protocol = plaintext

            #   prod: accept plaintext or sasl_plaintext to the brokers (logged
            #   at WARN on every start).
            #   True or false; default false; environment
            #   MSGX_KAFKA_SECURITY_ALLOW_PLAINTEXT.
            #   Leave false. true accepts plaintext or sasl_plaintext in prod,
            #   for brokers on a network you trust; every start logs a warning.
            allow-plaintext = false

            ssl
                ca
                    #   PEM file of the CA that signed the brokers'
                    #   certificates; empty = the system's CAs.
                    #   Text; default empty; environment
                    #   MSGX_KAFKA_SECURITY_SSL_CA_LOCATION.
                    #   The CA of the brokers' certificates, readable by the
                    #   msgx user; empty uses the system's CAs.
                    location = ""

                certificate
                    #   PEM client certificate (brokers that require TLS client
                    #   authentication).
                    #   Text; default empty; environment
                    #   MSGX_KAFKA_SECURITY_SSL_CERTIFICATE_LOCATION.
                    #   Only when the brokers authenticate clients by
                    #   certificate (mutual TLS); set the key too.
                    location = ""

                key
                    #   PEM private key of the client certificate.
                    #   Text; default empty; environment
                    #   MSGX_KAFKA_SECURITY_SSL_KEY_LOCATION.
                    #   The key of ssl.certificate.location, mode 0600 or 0640
                    #   group msgx.
                    location = ""

                    #   passphrase of the client key (shown as *** in dumps).
                    #   Text; default empty; environment
                    #   MSGX_KAFKA_SECURITY_SSL_KEY_PASSWORD.
                    #   Only for an encrypted key. Keep it out of this file:
                    #   ssl.key.password-file names a file holding it, or set
                    #   MSGX_KAFKA_SECURITY_SSL_KEY_PASSWORD_FILE.
                    password = ""

                endpoint
                    identification
                        #   https: the broker's certificate must name the
                        #   broker's host; none: any name (not in prod).
                        #   Text; default https; environment
                        #   MSGX_KAFKA_SECURITY_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM.
                        #   Leave https: the broker's certificate must name the
                        #   host in bootstrap-servers. none is refused in prod.
                        algorithm = https

            sasl
                #   PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; needed by the sasl_
                #   protocols.
                #   Text; default empty; environment
                #   MSGX_KAFKA_SECURITY_SASL_MECHANISMS.
                #   What the brokers offer: SCRAM-SHA-512 or SCRAM-SHA-256 (the
                #   password never crosses the network), PLAIN only inside TLS.
                mechanisms = ""

                #   SASL user.
                #   Text; default empty; environment
                #   MSGX_KAFKA_SECURITY_SASL_USERNAME.
                #   The producer account the Kafka team made for msgxd.
                username = ""

                #   SASL password (shown as *** in dumps).
                #   Text; default empty; environment
                #   MSGX_KAFKA_SECURITY_SASL_PASSWORD.
                #   Keep it out of this file: sasl.password-file names a file
                #   holding it (mode 0600 or 0640 group msgx), or set
                #   MSGX_KAFKA_SECURITY_SASL_PASSWORD_FILE in msgxd.env.
                password = ""

    delivery
        #   delivery attempts of an event before it stays DEAD as the
        #   dead-letter record.
        #   Integer; default 10; environment MSGX_DELIVERY_MAX_ATTEMPTS.
        #   With delivery.backoff it decides how long a Kafka outage may last
        #   before events become DEAD (defaults: about 7 minutes); raise both
        #   where outages last longer.
        max-attempts = 10

        #   delivery retry delays after attempt 1, 2, ...; the last one repeats.
        #   Comma-separated durations; default 1s,5s,30s,1m; environment
        #   MSGX_DELIVERY_BACKOFF.
        #   Lengthen the last delay to ride out long outages without many
        #   attempts.
        backoff = 1s,5s,30s,1m

        #   exactly-once: every new producer first reads what each partition
        #   holds and sends only what is missing; at-least-once: what was not
        #   acknowledged goes again.
        #   Text; default exactly-once; environment MSGX_DELIVERY_SEMANTICS.
        #   Keep exactly-once: consumers then read every event once without
        #   deduplicating. at-least-once only saves the look at the topic a new
        #   producer makes (milliseconds); switching either way is safe at any
        #   restart.
        semantics = exactly-once

        #   exactly-once: bound of one look at what the topic's partitions hold
        #   (a failed look is retried).
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 5s; environment
        #   MSGX_DELIVERY_INSPECT_TIMEOUT.
        #   Long enough to read the last records of every partition of the
        #   larger topic; a look that fails is retried at the next round, and
        #   nothing is sent meanwhile.
        inspect-timeout = 5s

    republish
        #   events a second a republish job writes into the outbox (1..100000).
        #   Integer; default 500; environment MSGX_REPUBLISH_RATE.
        #   A job writes at most this many events a second, in steps of a tenth
        #   of it (up to 500), each its own transaction, so the outbox and the
        #   brokers are not flooded while traffic flows.
        rate = 500

    http
        #   host:port of /health, /health/live, /health/ready and /metrics.
        #   Text; default 127.0.0.1:8080; environment MSGX_HTTP_BIND.
        #   An address Prometheus and the load balancer's probes reach; it
        #   serves only reads (/health, /health/live, /health/ready, /metrics),
        #   without authentication: bind to an internal interface and firewall
        #   the port.
        bind = 127.0.0.1:8080

        #   larger POST bodies are refused with 413.
        #   Integer, bytes; default 16777216; environment
        #   MSGX_HTTP_MAX_BODY_BYTES.
        #   Keep it at or above codec.max-message-bytes.
        max-body-bytes = 16777216

        #   a connection idle this long (a slow or stalled client) is closed;
        #   whole seconds, 1s to 1h.
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 10s; environment
        #   MSGX_HTTP_IDLE_TIMEOUT.
        #   Raise it only for clients on slow links that pause mid-request; each
        #   idle connection holds one of http.max-connections slots.
        idle-timeout = 10s

        #   most open connections on each HTTP bind (1..1024); more are refused
        #   at accept.
        #   Integer; default 64; environment MSGX_HTTP_MAX_CONNECTIONS.
        #   Enough for the scrapers, the probes and the AODB's writers together;
        #   a connection beyond it is closed at once.
        max-connections = 64

        #   most open connections from one client address on each HTTP bind
        #   (1..max-connections).
        #   Integer; default 8; environment MSGX_HTTP_PER_IP_CONNECTIONS.
        #   One client (or a NAT in front of many) cannot take every slot; raise
        #   it only for a proxy that carries many clients.
        per-ip-connections = 8

        compat
            #   true: serve POST /cminmsgs/send on msgx.http.compat.bind; needs
            #   token-file and/or allow.
            #   True or false; default false; environment
            #   MSGX_HTTP_COMPAT_ENABLED.
            #   Only when the AODB writes through HTTP instead of the mailbox:
            #   the entry writes authoritative flight messages, so it needs
            #   token-file and/or allow.
            enabled = false

            #   host:port of the compat entry POST /cminmsgs/send (not the
            #   /health and /metrics bind).
            #   Text; default 127.0.0.1:8081; environment MSGX_HTTP_COMPAT_BIND.
            #   An internal address the AODB reaches, never 0.0.0.0 on a shared
            #   network; firewall it to the AODB's hosts.
            bind = 127.0.0.1:8081

            #   file holding the bearer token the compat entry requires
            #   (Authorization: Bearer ...); not readable by others in prod;
            #   empty = no token.
            #   Text; default empty; environment MSGX_HTTP_COMPAT_TOKEN_FILE.
            #   /etc/msgxd/compat-token, owner msgx, mode 0600 (prod refuses a
            #   file open to others); the AODB sends Authorization: Bearer
            #   <token>. Change it by replacing the file and restarting.
            token-file = ""

            #   client addresses the compat entry accepts, comma-separated CIDR
            #   (10.0.0.0/8,::1/128); empty = any.
            #   Text; default empty; environment MSGX_HTTP_COMPAT_ALLOW.
            #   The AODB's addresses, e.g. 10.20.0.15/32; others get 403 before
            #   the token is looked at.
            allow = ""

    api
        #   true: serve the read API (GET /flights, /flights/{flid},
        #   /all/flights, /reference/{list}) on msgx.api.bind.
        #   True or false; default false; environment MSGX_API_ENABLED.
        #   Off by default: turn it on where consumers or operators read flight
        #   state over HTTP. It reads PostgreSQL only, so a standby serves it as
        #   well as the active: point heavy readers at the standby.
        enabled = false

        #   host:port of the read API (not the /health and /metrics bind, not
        #   the compat entry's).
        #   Text; default 127.0.0.1:8082; environment MSGX_API_BIND.
        #   Loopback unless readers on other hosts need it; then an internal
        #   address, firewalled, with token-file set.
        bind = 127.0.0.1:8082

        #   file holding the bearer token the read API requires (Authorization:
        #   Bearer ...); not readable by others in prod; empty = no token.
        #   Text; default empty; environment MSGX_API_TOKEN_FILE.
        #   Set it whenever the bind is not loopback: /etc/msgxd/api-token,
        #   owner msgx, mode 0600 (prod refuses a file open to others); readers
        #   send Authorization: Bearer <token>.
        token-file = ""

        #   most flights in one page of GET /flights (1..5000); a larger limit
        #   is refused with 400.
        #   Integer; default 500; environment MSGX_API_PAGE_SIZE.
        #   Bounds the work of one request; readers page with next_cursor. Raise
        #   only if a reader needs bigger pages and the database keeps up.
        page-size = 500

        #   PostgreSQL statement timeout of the read API's session: a read that
        #   takes longer is refused with 503.
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 2s; environment
        #   MSGX_API_STATEMENT_TIMEOUT.
        #   A read that takes longer is refused with 503 rather than holding a
        #   session; keep it well under the readers' own timeouts.
        statement-timeout = 2s

        #   GET /all/flights: operation days from today minus this to today plus
        #   this (0..7).
        #   Integer, days; default 1; environment MSGX_API_WINDOW_DAYS.
        #   1 covers yesterday, today and tomorrow in the airport zone for GET
        #   /all/flights.
        window-days = 1

        #   reader threads of the read API, each with its own PostgreSQL session
        #   (1..16): a slow read holds up only its own reader.
        #   Integer; default 1; environment MSGX_API_READERS.
        #   Each reader holds a PostgreSQL session and a thread. 1 leaves the
        #   most CPU to processing on an instance that drains; 2 or more keeps
        #   single-flight reads answered while another reader streams GET
        #   /all/flights or waits on a busy database: on a standby serving
        #   reads, or with cores to spare.
        readers = 1

        #   nice value (-20..19) of the read API's threads (its readers and the
        #   http thread): negative puts reads before processing when the cores
        #   are busy (needs CAP_SYS_NICE or LimitNICE); 0 leaves them alone.
        #   Integer; default 0; environment MSGX_API_NICE.
        #   Leave 0 unless reads must stay fast while a backlog drains on the
        #   same cores; then e.g. -5 with LimitNICE=-5 (or CAP_SYS_NICE) in the
        #   unit. It orders msgxd's own threads only: PostgreSQL's backends keep
        #   theirs.
        nice = 0

        #   state documents kept in memory on the active instance (every flight
        #   it writes or reads, least recent out first), answered without
        #   PostgreSQL by GET /flights/{flid} and taken by the lists
        #   (0..1000000); 0 = off.
        #   Integer; default 4096; environment MSGX_API_CACHE_FLIGHTS.
        #   Used only while this instance is active (it alone writes flight
        #   state, so it keeps the cache coherent); a standby reads PostgreSQL.
        #   About 2 KB a flight: 4096 with 8 MiB covers a busy day. 0 when
        #   memory is tight.
        cache-flights = 4096

        #   most bytes of state documents kept by msgx.api.cache-flights
        #   (0..1073741824); 0 = off.
        #   Integer, bytes; default 8388608; environment MSGX_API_CACHE_BYTES.
        #   Bounds the cache's memory with msgx.api.cache-flights, whichever is
        #   reached first; counts into the peak RSS (docs/performance.md).
        cache-bytes = 8388608

        #   GET /flights/{flid} of a cached flight whose change is committing:
        #   previous = the state before it, until the commit's end (never waits;
        #   PostgreSQL may show the new one for those milliseconds), wait = wait
        #   for the commit (at most 25 ms) and answer the new one.
        #   Text; default previous; environment MSGX_API_READ_DURING_COMMIT.
        #   previous keeps single-flight reads fast while a backlog drains;
        #   every change a Kafka record or msgxctl announces is already
        #   answered. wait when a client compares GET /flights/{flid} with
        #   PostgreSQL or with the lists, which read it (docs/architecture.md).
        read-during-commit = previous

    admin
        #   msgxctl endpoint, ipc:// (mode 0600, or 0660 with admin.group) or
        #   tcp:// (on loopback, or anywhere with admin.curve).
        #   Text; default ipc://msgx-admin.sock; environment
        #   MSGX_ADMIN_ENDPOINT.
        #   An ipc:// path is mode 0600 (only the msgx user and root connect;
        #   see admin.group); under systemd ipc:///run/msgxd/admin.sock, which
        #   msgxctl uses by default. tcp:// has no authentication of its own: it
        #   is refused unless on a loopback address (127.0.0.1, [::1]) or with
        #   CURVE (admin.curve); the audit log then records the peer's address
        #   (and its CURVE key) instead of its uid.
        endpoint = ipc://msgx-admin.sock

        #   group whose members may use the ipc admin socket (made mode 0660 and
        #   group-owned); empty = owner only.
        #   Text; default empty; environment MSGX_ADMIN_GROUP.
        #   msgx-admin (created by the package) lets its members run msgxctl
        #   without root: add operators with adduser NAME msgx-admin. The msgx
        #   user must be a member too, to hand the socket to the group.
        group = ""

        curve
            #   zcert file of the tcp:// admin socket's CURVE key pair (the
            #   secret half in FILE_secret); set = CURVE on.
            #   Text; default empty; environment MSGX_ADMIN_CURVE_SERVER_CERT.
            #   Only for a tcp:// admin endpoint reached from other hosts. Make
            #   the pair once with zcert (czmq): FILE holds the public key,
            #   FILE_secret the secret one (mode 0640, group msgx); hand FILE to
            #   the operators for msgxctl --curve-server.
            server-cert = ""

            #   folder of the public zcert files of the msgxctl clients allowed
            #   over CURVE.
            #   Text; default empty; environment MSGX_ADMIN_CURVE_CLIENTS.
            #   One public certificate file per operator (msgxctl --curve-cert
            #   FILE; FILE goes here, FILE_secret stays with the operator).
            #   Removing a file revokes that client.
            clients = ""

        #   largest admin request; ZeroMQ closes the connection of a larger one
        #   before msgxd reads it.
        #   Integer, bytes; default 65536; environment
        #   MSGX_ADMIN_MAX_REQUEST_BYTES.
        #   Rarely changed: the largest request (replay --id with thousands of
        #   ids) is a few tens of kilobytes.
        max-request-bytes = 65536

mailbox
    shared-mysql
        #   false: ingress, backfill, compat entry and COUTMSGS are off.
        #   True or false; default false; environment
        #   MAILBOX_SHARED_MYSQL_ENABLED.
        #   true in production; false turns ingress, backfill, the compat entry
        #   and requests off.
        enabled = false

        #   mailbox server host.
        #   Text; default 127.0.0.1; environment MAILBOX_SHARED_MYSQL_HOST.
        #   The AODB's MySQL or MariaDB server.
        host = 127.0.0.1

        #   mailbox server port.
        #   Integer; default 3306; environment MAILBOX_SHARED_MYSQL_PORT.
        #   The server's port.
        port = 3306

        #   mailbox user.
        #   Text; default empty; environment MAILBOX_SHARED_MYSQL_USER.
        #   An account allowed to read CMINMSGS, update its processed mark and
        #   insert into COUTMSGS.
        user = ""

        #   mailbox password (shown as *** in dumps).
        #   Text; default empty; environment MAILBOX_SHARED_MYSQL_PASSWORD.
        #   Keep it out of this file: password-file names a file holding it
        #   (mode 0600 or 0640 group msgx), or set
        #   MAILBOX_SHARED_MYSQL_PASSWORD_FILE (or the password itself) in the
        #   service's environment file (mode 0600).
        password = ""

        #   mailbox database.
        #   Text; default aodbinterface; environment
        #   MAILBOX_SHARED_MYSQL_DATABASE.
        #   The schema that holds CMINMSGS and COUTMSGS.
        database = aodbinterface

        #   Unix socket path; used instead of host:port when set.
        #   Text; default empty; environment MAILBOX_SHARED_MYSQL_SOCKET.
        #   Only when the mailbox server runs on this host.
        socket = ""

        #   connect timeout (whole seconds, at least 1s).
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 5s; environment
        #   MAILBOX_SHARED_MYSQL_CONNECT_TIMEOUT.
        #   Rarely changed.
        connect-timeout = 5s

        #   read timeout (whole seconds, at least 1s).
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 30s; environment
        #   MAILBOX_SHARED_MYSQL_READ_TIMEOUT.
        #   Raise only if large mailbox reads time out on a slow link.
        read-timeout = 30s

        #   write timeout (whole seconds, at least 1s).
        #   Duration (500ms, 30s, 10m, 2h, 30d); default 30s; environment
        #   MAILBOX_SHARED_MYSQL_WRITE_TIMEOUT.
        #   Rarely changed.
        write-timeout = 30s

        #   session time zone of the mailbox's DATETIME columns, as a MariaDB
        #   offset like +08:00.
        #   Text; default +08:00; environment MAILBOX_SHARED_MYSQL_TIME_ZONE.
        #   The offset in which the AODB writes its DATETIME columns.
        time-zone = +08:00

        #   disabled, required (encrypted, server not verified) or verify-full
        #   (CA and host name checked); prod needs verify-full.
        #   Text; default disabled; environment MAILBOX_SHARED_MYSQL_SSL_MODE.
        #   verify-full in production: encrypted, the certificate checked
        #   against ssl-ca and the host name. required encrypts without checking
        #   who answers; prod refuses it (and disabled) over TCP unless
        #   allow-unverified.
        ssl-mode = disabled

        #   PEM file of the CA that signed the mailbox server's certificate.
        #   Text; default empty; environment MAILBOX_SHARED_MYSQL_SSL_CA.
        #   The CA of the mailbox server's certificate, from the AODB team.
        ssl-ca = ""

        #   PEM client certificate, when the server asks for one.
        #   Text; default empty; environment MAILBOX_SHARED_MYSQL_SSL_CERT.
        #   Only when the mailbox server requires client certificates (REQUIRE
        #   X509); set the key too.
        ssl-cert = ""

        #   PEM private key of the client certificate.
        #   Text; default empty; environment MAILBOX_SHARED_MYSQL_SSL_KEY.
        #   The key of ssl-cert, mode 0600 or 0640 group msgx.
        ssl-key = ""

        #   prod: accept an ssl-mode below verify-full over TCP.
        #   True or false; default false; environment
        #   MAILBOX_SHARED_MYSQL_ALLOW_UNVERIFIED.
        #   Leave false. true accepts ssl-mode required or disabled in prod, for
        #   a mailbox on a network you trust; every start logs a warning.
        allow-unverified = false

    #   processed mark written back into CMINMSGS.
    #   Text; default PROCESSED; environment MAILBOX_PROCESSED_VALUE.
    #   Agree it with the mailbox owner.
    processed-value = PROCESSED

    outbound
        #   COUTMSGS ROUTINGID of schedule requests (RQFD).
        #   Text; default MSGXRQFD; environment MAILBOX_OUTBOUND_ROUTING_RQFD.
        #   Agree it with the AODB team.
        routing-rqfd = MSGXRQFD

        #   COUTMSGS ROUTINGID of reference requests (RQRD).
        #   Text; default MSGXRQRD; environment MAILBOX_OUTBOUND_ROUTING_RQRD.
        #   Agree it with the AODB team.
        routing-rqrd = MSGXRQRD
