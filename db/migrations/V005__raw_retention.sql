-- V004: a copy of each processed message's raw text, kept for
-- msgx.pipeline.raw-retention, so that show and replay do not depend on
-- the mailbox keeping its rows (its owner may purge the marked ones).
--
-- bytea, not text: the mailbox column holds bytes, and one row that is not
-- valid UTF-8 must not fail a batch's COPY. Compressed by PostgreSQL's own
-- TOAST (lz4 when the session's default_toast_compression says so, as the
-- processor's does; pglz otherwise): no extra library, no decompression in
-- msgxd. toast_tuple_target 128 makes the toaster compress rows of a few
-- hundred bytes too, which the default (about 2 KB) would leave as they are.
--
-- kept_at is written in msg_id order, so a BRIN index finds the expired
-- range for the bounded sweep at next to no cost per insert.
CREATE TABLE raw_message (
    msg_id  bigint PRIMARY KEY,
    kept_at timestamptz NOT NULL,
    raw     bytea NOT NULL
) WITH (toast_tuple_target = 128);

CREATE INDEX raw_message_kept_at_idx ON raw_message USING brin (kept_at);
