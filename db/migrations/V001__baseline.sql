-- V001 baseline: the whole schema of SPEC.md section 2 and WIRE.md sections 6-7.
--
-- Applied by mx_migrate inside one transaction together with its row in
-- schema_migrations, so this file must not contain BEGIN/COMMIT. Once a
-- release has applied it anywhere, it is never edited: changes go into a new
-- V<n>__<name>.sql.
--
-- Times are timestamptz throughout. Defaults of now() are a fallback only:
-- code driven by the injectable clock writes its own times.

-- ---------------------------------------------------------------------------
-- Inbound lifecycle
-- ---------------------------------------------------------------------------

-- One row per inbound message; msg_id = CMINMSGS_ID.
CREATE TABLE proc_state (
    msg_id                      bigint      PRIMARY KEY CHECK (msg_id > 0),
    state                       text        NOT NULL DEFAULT 'PENDING'
        CONSTRAINT proc_state_state_check
        CHECK (state IN ('PENDING', 'FAILED', 'SUCCEEDED', 'SKIPPED', 'DEAD')),
    source                      text        NOT NULL DEFAULT 'poll'
        CONSTRAINT proc_state_source_check
        CHECK (source IN ('poll', 'compat')),
    msg_type                    text,
    msg_styp                    text,
    identity_key                text        CONSTRAINT proc_state_identity_key_key UNIQUE,
    attempts                    integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at             timestamptz,
    error_class                 text
        CONSTRAINT proc_state_error_class_check
        CHECK (error_class IN ('MALFORMED', 'PROTOCOL', 'CODEC_ERROR',
                               'UNSUPPORTED', 'INFRA', 'EXHAUSTED')),
    last_error                  text,
    outcome                     text,
    received_at                 timestamptz,
    processing_started_at       timestamptz,
    created_at                  timestamptz NOT NULL DEFAULT now(),
    updated_at                  timestamptz NOT NULL DEFAULT now(),
    finished_at                 timestamptz,
    backfill_next_at            timestamptz,
    backfill_at                 timestamptz,
    backfill_attempts           integer     NOT NULL DEFAULT 0 CHECK (backfill_attempts >= 0),
    backfill_error              text,
    backfill_abandoned_at       timestamptz,
    backfill_abandoned_reason   text
        CONSTRAINT proc_state_backfill_abandoned_reason_check
        CHECK (backfill_abandoned_reason IN ('MISSING', 'EXHAUSTED')),
    -- A mark is only ever owed by a terminal row: PENDING/FAILED are never
    -- marked, and replay clears the intent when it reopens a row.
    CONSTRAINT proc_state_backfill_intent_terminal
        CHECK (backfill_next_at IS NULL
               OR state IN ('SUCCEEDED', 'SKIPPED', 'DEAD')),
    CONSTRAINT proc_state_backfill_abandoned_pair
        CHECK ((backfill_abandoned_at IS NULL) = (backfill_abandoned_reason IS NULL))
);

-- FIFO head: lowest msg_id still PENDING or FAILED. Queries must repeat the
-- predicate literally for the planner to pick this index.
CREATE INDEX proc_state_head_idx ON proc_state (msg_id)
    WHERE state IN ('PENDING', 'FAILED');

-- Backfill sweep: terminal, intent set, not confirmed, not abandoned,
-- ordered by (backfill_attempts, msg_id).
CREATE INDEX proc_state_backfill_sweep_idx ON proc_state (backfill_attempts, msg_id)
    WHERE state IN ('SUCCEEDED', 'SKIPPED', 'DEAD')
      AND backfill_next_at IS NOT NULL
      AND backfill_at IS NULL
      AND backfill_abandoned_at IS NULL;

-- Archive job: terminal rows by age.
CREATE INDEX proc_state_archive_idx ON proc_state (finished_at)
    WHERE state IN ('SUCCEEDED', 'SKIPPED', 'DEAD');

-- dead list / replay by error class.
CREATE INDEX proc_state_error_class_idx ON proc_state (error_class, msg_id)
    WHERE state IN ('FAILED', 'DEAD');

-- Business identity dedupe record. No foreign key to proc_state on purpose:
-- it outlives the archiving of proc_state rows.
CREATE TABLE identity (
    identity_key    text        PRIMARY KEY,
    msg_id          bigint      NOT NULL,
    bound_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX identity_msg_id_idx ON identity (msg_id);

-- Watermark W and the hole timer; exactly one row (id is always true).
CREATE TABLE inbox_cursor (
    id              boolean     PRIMARY KEY DEFAULT true CHECK (id),
    committed_up_to bigint      NOT NULL DEFAULT 0 CHECK (committed_up_to >= 0),
    hole_since      timestamptz,
    seeded_at       timestamptz,
    updated_at      timestamptz NOT NULL DEFAULT now()
);
INSERT INTO inbox_cursor (id, committed_up_to) VALUES (true, 0);

-- Holes released by ageing, and what late-arrival detection found in them.
CREATE TABLE released_hole (
    id                  bigserial   PRIMARY KEY,
    id_from             bigint      NOT NULL CHECK (id_from > 0),
    id_to               bigint      NOT NULL,
    released_at         timestamptz NOT NULL,
    last_checked_at     timestamptz,
    late_detected_at    timestamptz,
    late_ids            bigint[],
    CONSTRAINT released_hole_range CHECK (id_to >= id_from)
);
CREATE INDEX released_hole_released_at_idx ON released_hole (released_at);

-- ---------------------------------------------------------------------------
-- Outbox
-- ---------------------------------------------------------------------------

-- event_id is the delivery order per target.
CREATE TABLE msg_event (
    event_id        bigserial   PRIMARY KEY,
    target          text        NOT NULL
        CONSTRAINT msg_event_target_check
        CHECK (target IN ('KAFKA:msg', 'KAFKA:schd')),
    partition_key   text        NOT NULL,
    event_type      text        NOT NULL
        CONSTRAINT msg_event_event_type_check
        CHECK (event_type IN ('UPSERT', 'TOMBSTONE')),
    flid            bigint      NOT NULL,
    state_version   bigint      NOT NULL,
    msg_id          bigint,                 -- NULL for job-made events (history sweep)
    payload         text,                   -- JSON text as sent; NULL = null value
    state           text        NOT NULL DEFAULT 'PENDING'
        CONSTRAINT msg_event_state_check
        CHECK (state IN ('PENDING', 'SENT', 'DEAD')),
    attempts        integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at timestamptz,
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    sent_at         timestamptz,
    merged_into     bigint                  -- KAFKA:schd: the newer event that carried this state
);

-- Dispatcher: PENDING events per target in delivery order.
CREATE INDEX msg_event_pending_idx ON msg_event (target, event_id)
    WHERE state = 'PENDING';

-- schd-aggregator: newest pending state per flight.
CREATE INDEX msg_event_schd_pending_idx ON msg_event (flid, state_version)
    WHERE target = 'KAFKA:schd' AND state = 'PENDING';

CREATE INDEX msg_event_msg_id_idx ON msg_event (msg_id);

-- ---------------------------------------------------------------------------
-- Operational flight state (WIRE.md section 6; columns are wire codes)
-- ---------------------------------------------------------------------------

CREATE TABLE flight_schd (
    flid            bigint      PRIMARY KEY CHECK (flid > 0),
    alcd            text        NOT NULL,
    alsc            text,
    flno            text        NOT NULL,
    mvin            text        NOT NULL CHECK (mvin IN ('A', 'D')),
    sodt            timestamptz NOT NULL,
    operation_day   date        NOT NULL,
    flty            text,
    flin            text,
    acft            text,
    reno            text,
    trml            text,
    maxp            bigint,
    runw            text,
    stnd            text,
    taop            text,
    tafl            text,
    taid            bigint,
    csop            text,
    csft            text,
    maid            bigint,
    phag            bigint,
    fhag            bigint,
    mhag            bigint,
    exsc            text,
    exsr            text,
    ftss            text,
    remc            text,
    vipp            bigint,
    vipr            bigint,
    cncl            timestamptz,
    fdiv_ddes       text,
    fdiv_ddir       text,
    fdiv            text,
    fret_reid       text,
    fret            text,
    flab_ares       text,
    flab            text,
    estt            timestamptz,
    actt            timestamptz,
    appt            timestamptz,
    botm            timestamptz,
    lacl            timestamptz,
    fint            timestamptz,
    egsr            timestamptz,
    egst            timestamptz,
    cobt            timestamptz,
    ctot            timestamptz,
    eobt            timestamptz,
    tobt            timestamptz,
    iest            timestamptz,
    pedt            timestamptz,
    neat            timestamptz,
    padt            timestamptz,
    naat            timestamptz,
    port_open       timestamptz,
    port_close      timestamptz,
    lbno            bigint,
    lbwt            bigint,
    paxc            bigint,
    psht            jsonb,
    tipt            jsonb,
    srvt            jsonb,
    vipf            jsonb,
    extra           jsonb       NOT NULL DEFAULT '{}'::jsonb,  -- unknown elements, code -> text
    state_version   bigint      NOT NULL DEFAULT 1 CHECK (state_version >= 0),
    last_msg_id     bigint,
    lifecycle       text        NOT NULL DEFAULT 'ACTIVE'
        CONSTRAINT flight_schd_lifecycle_check
        CHECK (lifecycle IN ('ACTIVE', 'DELETED')),
    deleted_at      timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT flight_schd_deleted_at_check
        CHECK ((lifecycle = 'DELETED') = (deleted_at IS NOT NULL))
);

-- History sweep selects by operation day.
CREATE INDEX flight_schd_operation_day_idx ON flight_schd (operation_day);

-- operation_day is fixed when the flight is created (WIRE.md section 8).
-- The processors detect a cross-day FLID first; this is the last line.
CREATE FUNCTION flight_schd_keep_operation_day () RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.operation_day IS DISTINCT FROM OLD.operation_day THEN
        RAISE EXCEPTION 'operation_day of flight % is immutable (% -> %)',
            OLD.flid, OLD.operation_day, NEW.operation_day
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER flight_schd_operation_day_immutable
    BEFORE UPDATE OF operation_day ON flight_schd
    FOR EACH ROW EXECUTE FUNCTION flight_schd_keep_operation_day ();

-- The 8 set tables: a FLOP of the subtype replaces the whole set.
CREATE TABLE flight_stand (
    flid    bigint      NOT NULL REFERENCES flight_schd (flid) ON DELETE CASCADE,
    psno    integer     NOT NULL,
    psst    text,
    stst    timestamptz,
    stet    timestamptz,
    PRIMARY KEY (flid, psno)
);

CREATE TABLE flight_gate (
    flid    bigint      NOT NULL REFERENCES flight_schd (flid) ON DELETE CASCADE,
    gtno    integer     NOT NULL,
    gate    text,
    pgot    timestamptz,
    pgct    timestamptz,
    gotm    timestamptz,
    gctm    timestamptz,
    gtyp    text,
    PRIMARY KEY (flid, gtno)
);

CREATE TABLE flight_checkin (
    flid    bigint      NOT NULL REFERENCES flight_schd (flid) ON DELETE CASCADE,
    ckno    integer     NOT NULL,
    chkc    text,
    ccls    text,
    pcot    timestamptz,
    pcct    timestamptz,
    cotm    timestamptz,
    cctm    timestamptz,
    ctyp    text,
    PRIMARY KEY (flid, ckno)
);

CREATE TABLE flight_carousel (
    flid    bigint      NOT NULL REFERENCES flight_schd (flid) ON DELETE CASCADE,
    clno    integer     NOT NULL,
    belt    text,
    bcls    text,
    pcot    timestamptz,
    pcct    timestamptz,
    fbag    timestamptz,
    lbag    timestamptz,
    btyp    text,
    PRIMARY KEY (flid, clno)
);

CREATE TABLE flight_chute (
    flid    bigint      NOT NULL REFERENCES flight_schd (flid) ON DELETE CASCADE,
    chno    integer     NOT NULL,
    chut    text,
    ccls    text,
    pcbt    timestamptz,
    pcet    timestamptz,
    cbtm    timestamptz,
    cetm    timestamptz,
    ctyp    text,
    PRIMARY KEY (flid, chno)
);

CREATE TABLE flight_airbridge (
    flid    bigint      NOT NULL REFERENCES flight_schd (flid) ON DELETE CASCADE,
    asno    integer     NOT NULL,
    abdg    text,
    abop    timestamptz,
    aotm    timestamptz,
    PRIMARY KEY (flid, asno)
);

CREATE TABLE flight_chock (
    flid    bigint      NOT NULL REFERENCES flight_schd (flid) ON DELETE CASCADE,
    csno    integer     NOT NULL,
    chtm    timestamptz,
    chid    text,                           -- ON / OFF
    chst    text,
    PRIMARY KEY (flid, csno)
);

-- seq is the position of the DELY element in the message, 1..n.
CREATE TABLE flight_delay (
    flid    bigint      NOT NULL REFERENCES flight_schd (flid) ON DELETE CASCADE,
    seq     integer     NOT NULL CHECK (seq >= 1),
    code    text,
    strt    timestamptz,
    dura    integer,                        -- minutes
    reason  text,
    PRIMARY KEY (flid, seq)
);

CREATE TABLE flight_route_point (
    flid    bigint      NOT NULL REFERENCES flight_schd (flid) ON DELETE CASCADE,
    kind    text        NOT NULL
        CONSTRAINT flight_route_point_kind_check CHECK (kind IN ('ROUT', 'ERUT')),
    rtno    integer     NOT NULL,
    apcd    text,
    scat    timestamptz,
    sadc    text,
    scdt    timestamptz,
    sddc    text,
    PRIMARY KEY (flid, kind, rtno)
);

-- One row per applied schedule message; kept 90 days.
CREATE TABLE schd_snap_log (
    id                  bigserial   PRIMARY KEY,
    msg_id              bigint      NOT NULL,
    styp                text        NOT NULL,
    scope_begin         timestamptz,
    scope_end           timestamptz,
    recv_at             timestamptz NOT NULL,
    flights_inserted    integer     NOT NULL DEFAULT 0,
    flights_updated     integer     NOT NULL DEFAULT 0,
    flights_unchanged   integer     NOT NULL DEFAULT 0
);
CREATE INDEX schd_snap_log_msg_id_idx ON schd_snap_log (msg_id);
CREATE INDEX schd_snap_log_retention_idx ON schd_snap_log (scope_end, recv_at);

-- ---------------------------------------------------------------------------
-- Requests upstream and reference data
-- ---------------------------------------------------------------------------

CREATE TABLE req_track (
    id              bigserial   PRIMARY KEY,
    kind            text        NOT NULL
        CONSTRAINT req_track_kind_check CHECK (kind IN ('RQFD', 'RQRD')),
    rtype           text,                   -- RQRD: the list code
    window_begin    timestamptz,            -- RQFD: STDB
    window_end      timestamptz,            -- RQFD: STDE
    seqn            integer     NOT NULL CHECK (seqn BETWEEN 1 AND 999999),
    state           text        NOT NULL DEFAULT 'REGISTERED'
        CONSTRAINT req_track_state_check
        CHECK (state IN ('REGISTERED', 'SENT', 'WAITING', 'DONE', 'EXPIRED')),
    requested_by    text,                   -- OS user of the CLI peer, or the daily trigger
    coutmsgs_id     bigint,
    registered_at   timestamptz NOT NULL,
    sent_at         timestamptz,
    expires_at      timestamptz,
    done_at         timestamptz,
    done_msg_id     bigint,
    last_error      text,
    CONSTRAINT req_track_rqfd_window
        CHECK (kind <> 'RQFD'
               OR (window_begin IS NOT NULL AND window_end IS NOT NULL
                   AND window_end >= window_begin)),
    CONSTRAINT req_track_rqrd_rtype
        CHECK (kind <> 'RQRD' OR rtype IS NOT NULL),
    -- SENT only after the COUTMSGS insert is confirmed.
    CONSTRAINT req_track_sent_has_outbound
        CHECK (state NOT IN ('SENT', 'WAITING', 'DONE')
               OR (coutmsgs_id IS NOT NULL AND sent_at IS NOT NULL))
);

-- At most one open request per kind.
CREATE UNIQUE INDEX req_track_one_open_idx ON req_track (kind)
    WHERE state IN ('REGISTERED', 'SENT', 'WAITING');

-- Crash repair looks the COUTMSGS row up by SEQN.
CREATE INDEX req_track_seqn_idx ON req_track (seqn);

-- Outbound SEQN counter: one row; next = last_seqn % 999999 + 1.
CREATE TABLE req_seqn (
    id              boolean     PRIMARY KEY DEFAULT true CHECK (id),
    last_seqn       integer     NOT NULL DEFAULT 0 CHECK (last_seqn BETWEEN 0 AND 999999),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
INSERT INTO req_seqn (id, last_seqn) VALUES (true, 0);

CREATE TABLE ref_master (
    rtype           text        NOT NULL,
    rkey            text        NOT NULL,
    value           jsonb       NOT NULL,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    last_msg_id     bigint,
    PRIMARY KEY (rtype, rkey)
);

-- ---------------------------------------------------------------------------
-- History store: the same columns as the live tables plus archived_at.
-- LIKE copies columns and NOT NULL only: no defaults, checks, keys or
-- triggers, so an archived row is kept exactly as it was.
-- A FLID may be archived again if upstream ever reuses it, hence
-- archived_at in the keys.
-- ---------------------------------------------------------------------------

CREATE TABLE flight_schd_hst (LIKE flight_schd);
ALTER TABLE flight_schd_hst
    ADD COLUMN archived_at timestamptz NOT NULL,
    ADD PRIMARY KEY (flid, archived_at);
CREATE INDEX flight_schd_hst_operation_day_idx ON flight_schd_hst (operation_day);

CREATE TABLE flight_stand_hst (LIKE flight_stand);
ALTER TABLE flight_stand_hst
    ADD COLUMN archived_at timestamptz NOT NULL,
    ADD PRIMARY KEY (flid, psno, archived_at);

CREATE TABLE flight_gate_hst (LIKE flight_gate);
ALTER TABLE flight_gate_hst
    ADD COLUMN archived_at timestamptz NOT NULL,
    ADD PRIMARY KEY (flid, gtno, archived_at);

CREATE TABLE flight_checkin_hst (LIKE flight_checkin);
ALTER TABLE flight_checkin_hst
    ADD COLUMN archived_at timestamptz NOT NULL,
    ADD PRIMARY KEY (flid, ckno, archived_at);

CREATE TABLE flight_carousel_hst (LIKE flight_carousel);
ALTER TABLE flight_carousel_hst
    ADD COLUMN archived_at timestamptz NOT NULL,
    ADD PRIMARY KEY (flid, clno, archived_at);

CREATE TABLE flight_chute_hst (LIKE flight_chute);
ALTER TABLE flight_chute_hst
    ADD COLUMN archived_at timestamptz NOT NULL,
    ADD PRIMARY KEY (flid, chno, archived_at);

CREATE TABLE flight_airbridge_hst (LIKE flight_airbridge);
ALTER TABLE flight_airbridge_hst
    ADD COLUMN archived_at timestamptz NOT NULL,
    ADD PRIMARY KEY (flid, asno, archived_at);

CREATE TABLE flight_chock_hst (LIKE flight_chock);
ALTER TABLE flight_chock_hst
    ADD COLUMN archived_at timestamptz NOT NULL,
    ADD PRIMARY KEY (flid, csno, archived_at);

CREATE TABLE flight_delay_hst (LIKE flight_delay);
ALTER TABLE flight_delay_hst
    ADD COLUMN archived_at timestamptz NOT NULL,
    ADD PRIMARY KEY (flid, seq, archived_at);

CREATE TABLE flight_route_point_hst (LIKE flight_route_point);
ALTER TABLE flight_route_point_hst
    ADD COLUMN archived_at timestamptz NOT NULL,
    ADD PRIMARY KEY (flid, kind, rtno, archived_at);

-- Archived terminal proc_state rows; msg_id is archived once.
CREATE TABLE proc_state_hst (LIKE proc_state);
ALTER TABLE proc_state_hst
    ADD COLUMN archived_at timestamptz NOT NULL,
    ADD PRIMARY KEY (msg_id);

-- ---------------------------------------------------------------------------
-- Audit trail: operator actions and degraded RESP matches.
-- ---------------------------------------------------------------------------

CREATE TABLE audit_log (
    id          bigserial   PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    actor       text        NOT NULL,       -- component that acted: msgxctl, requests, processor, ...
    os_user     text,                       -- OS user of the CLI peer when known
    action      text        NOT NULL,       -- replay, backfill-recover, cutover, request, degraded-match, ...
    target      jsonb,                      -- the rows concerned, e.g. {"msg_ids":[..]}
    result      text        NOT NULL,       -- ok, refused, dry-run, failed
    detail      text
);
CREATE INDEX audit_log_at_idx ON audit_log (at);
