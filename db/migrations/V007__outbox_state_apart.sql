-- V007: delivery state kept apart from the payload, and the outbox bounded.
--
-- Marking an event SENT (or failed, or DEAD) used to write a new version of
-- the whole row, its compressed payload of a few KB included: the payload
-- sat inline in the heap tuple. With toast_tuple_target 128, a row whose
-- payload makes it longer than 2 KB (every flight event does) stores the
-- payload compressed in the table's TOAST relation, and the heap tuple
-- keeps the delivery state (state, attempts, times, merged_into) and a
-- pointer. An UPDATE that does not change payload copies the pointer only:
-- the payload is written once, at insert, and never again. Rows written
-- before this migration keep their inline payload; nothing is rewritten.
ALTER TABLE msg_event SET (toast_tuple_target = 128);

-- The outbox purge (msgx.outbox.retention, the jobs actor) keeps a SENT
-- event of a compacted topic while an older DEAD event of its key exists:
-- replay would otherwise take that DEAD one for the key's newest state.
-- DEAD rows are few, so the index is small and costs only the rows that die.
CREATE INDEX msg_event_dead_idx ON msg_event (target, partition_key, event_id)
    WHERE state = 'DEAD';
