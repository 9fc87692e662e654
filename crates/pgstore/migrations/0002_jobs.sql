-- salt-rs master group, schema version 2: the job cache (`master_job_cache: pgjsonb`),
-- in the tables of Salt's `pgjsonb` returner (salt/returners/pgjsonb.py) so tools that read
-- them keep working, and the presence of minions (which master holds which minion).
-- `IF NOT EXISTS`: a database already set up from Salt's documented schema is adopted.

CREATE TABLE IF NOT EXISTS jids (
    jid  varchar(255) NOT NULL PRIMARY KEY,
    load jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_jids_jsonb ON jids USING gin (load) WITH (fastupdate = on);

CREATE TABLE IF NOT EXISTS salt_returns (
    fun        varchar(50) NOT NULL,
    jid        varchar(255) NOT NULL,
    return     jsonb NOT NULL,
    id         varchar(255) NOT NULL,
    success    varchar(10) NOT NULL,
    full_ret   jsonb NOT NULL,
    alter_time timestamp with time zone DEFAULT now()
);
CREATE INDEX IF NOT EXISTS idx_salt_returns_id ON salt_returns (id);
CREATE INDEX IF NOT EXISTS idx_salt_returns_jid ON salt_returns (jid);
CREATE INDEX IF NOT EXISTS idx_salt_returns_fun ON salt_returns (fun);
CREATE INDEX IF NOT EXISTS idx_salt_returns_return ON salt_returns
    USING gin (return) WITH (fastupdate = on);
CREATE INDEX IF NOT EXISTS idx_salt_returns_full_ret ON salt_returns
    USING gin (full_ret) WITH (fastupdate = on);
-- salt-rs: every return stored once per (jid, minion), whichever master received it
-- (Salt's schema has no such constraint; its readers do not mind one).
CREATE UNIQUE INDEX IF NOT EXISTS salt_returns_jid_id ON salt_returns (jid, id);

CREATE SEQUENCE IF NOT EXISTS seq_salt_events_id;
CREATE TABLE IF NOT EXISTS salt_events (
    id         bigint NOT NULL UNIQUE DEFAULT nextval('seq_salt_events_id'),
    tag        varchar(255) NOT NULL,
    data       jsonb NOT NULL,
    alter_time timestamp with time zone DEFAULT now(),
    master_id  varchar(255) NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_salt_events_tag ON salt_events (tag);
CREATE INDEX IF NOT EXISTS idx_salt_events_data ON salt_events
    USING gin (data) WITH (fastupdate = on);

-- Presence: the master a minion last signed in to, and when.
CREATE TABLE IF NOT EXISTS salt_rs_presence (
    cluster_id text NOT NULL,
    minion_id  text NOT NULL,
    master     text NOT NULL,
    seen_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster_id, minion_id)
);
-- Each master's heartbeat (a master that stopped beating holds no minion).
CREATE TABLE IF NOT EXISTS salt_rs_masters (
    cluster_id text NOT NULL,
    master     text NOT NULL,
    beat_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster_id, master)
);

-- Change-log trimming (keys): changes up to `log_trimmed_to` are gone from salt_key_log; a
-- master whose copy is older than that copies every key again instead of reading the log.
ALTER TABLE salt_groups ADD COLUMN IF NOT EXISTS log_trimmed_to bigint NOT NULL DEFAULT 0;
