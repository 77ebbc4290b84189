"""The database schema and its migrations, versioned with PRAGMA user_version.

Each migration is a list of statements applied in one transaction; a database at version N gets
migrations N+1.. in order. The embedding dimension is fixed when the vector table is created and
recorded in `meta` (`embedding_dimensions`; `Memory` also records the embedder's name, `embedder`,
when it creates a database), so a database opened with another embedder is refused instead of
ranking by noise or failing later inside a KNN query. `engine.reembed` re-creates the vector table
at another width (`create_vec_table`) without a schema version of its own: what it changes is data
and the table's declared width, not the layout.

Where things live: a fact's text and times in `knowledge`; its vector in `knowledge_vec` (user_id is
the partition key, and status and the four time bounds are metadata columns, so sqlite-vec applies
scope and time predicates inside the KNN search, before k); its words in `knowledge_fts` (rowid =
knowledge id; since v2 also a `scope` column with the user's token, ANDed into every MATCH).
`audit_log` is append-only: triggers refuse DELETE and every UPDATE except the one redaction erasure
performs (text fields cleared, `redacted_at` set, everything else unchanged).
"""

from __future__ import annotations

from collections.abc import Callable

from ..sql.text_arm import STILL_TRUE_SQL

SCHEMA_VERSION = 14

_V1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    user_id TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    content TEXT NOT NULL,
    at INTEGER NOT NULL,
    episode_id INTEGER REFERENCES episodes(id)
);
CREATE INDEX messages_unprocessed ON messages(user_id, episode_id, at, id);

CREATE TABLE episodes (
    id INTEGER PRIMARY KEY,
    user_id TEXT NOT NULL,
    title TEXT NOT NULL,
    narrative TEXT NOT NULL,
    start_at INTEGER,
    end_at INTEGER,
    status TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'processed', 'failed')),
    error TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    claimed_by TEXT,
    claimed_until INTEGER,
    created_at INTEGER NOT NULL
);
CREATE INDEX episodes_user_status ON episodes(user_id, status);

CREATE TABLE extraction_runs (
    id INTEGER PRIMARY KEY,
    episode_id INTEGER NOT NULL REFERENCES episodes(id),
    user_id TEXT NOT NULL,
    extractor TEXT NOT NULL,
    model TEXT,
    mode TEXT NOT NULL CHECK (mode IN ('predict', 'extract_all', 'cold_start')),
    prediction TEXT NOT NULL DEFAULT '',
    existing_ids TEXT NOT NULL DEFAULT '[]',
    covered TEXT NOT NULL DEFAULT '[]',
    claims INTEGER NOT NULL DEFAULT 0,
    predicted INTEGER NOT NULL DEFAULT 0,
    below_confidence INTEGER NOT NULL DEFAULT 0,
    invalid INTEGER NOT NULL DEFAULT 0,
    tombstoned INTEGER NOT NULL DEFAULT 0,
    duplicates INTEGER NOT NULL DEFAULT 0,
    supersedes_dropped INTEGER NOT NULL DEFAULT 0,
    unsupported INTEGER NOT NULL DEFAULT 0,
    queued INTEGER NOT NULL DEFAULT 0,
    started_at INTEGER NOT NULL,
    finished_at INTEGER,
    duration_ms REAL,
    error TEXT
);
CREATE INDEX runs_episode ON extraction_runs(episode_id);

CREATE TABLE candidates (
    id INTEGER PRIMARY KEY,
    user_id TEXT NOT NULL,
    episode_id INTEGER REFERENCES episodes(id),
    run_id INTEGER REFERENCES extraction_runs(id),
    statement TEXT NOT NULL,
    key TEXT NOT NULL,
    evidence TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL CHECK (kind IN ('new', 'update', 'contradiction', 'proposed', 'retraction')),
    supersedes_id INTEGER REFERENCES knowledge(id),
    confidence REAL NOT NULL,
    valid_at INTEGER,
    invalid_at INTEGER,
    unsupported INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected')),
    created_at INTEGER NOT NULL,
    created_by TEXT,
    claimed_by TEXT,
    claimed_until INTEGER,
    decided_by TEXT,
    decided_at INTEGER,
    decision TEXT,
    reason TEXT,
    knowledge_id INTEGER REFERENCES knowledge(id),
    CHECK (invalid_at IS NULL OR valid_at IS NULL OR invalid_at > valid_at)
);
CREATE INDEX candidates_queue ON candidates(status, created_at, id);
CREATE INDEX candidates_user ON candidates(user_id, status, key);

CREATE TABLE knowledge (
    id INTEGER PRIMARY KEY,
    user_id TEXT NOT NULL,
    statement TEXT NOT NULL,
    key TEXT NOT NULL,
    candidate_id INTEGER REFERENCES candidates(id),
    episode_id INTEGER REFERENCES episodes(id),
    confidence REAL NOT NULL DEFAULT 1.0,
    valid_at INTEGER,
    invalid_at INTEGER,
    created_at INTEGER NOT NULL,
    expired_at INTEGER,
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'superseded', 'retracted')),
    end_reason TEXT,
    superseded_by INTEGER REFERENCES knowledge(id),
    created_by TEXT NOT NULL,
    CHECK (invalid_at IS NULL OR valid_at IS NULL OR invalid_at > valid_at),
    CHECK ((status = 'active') = (expired_at IS NULL))
);
CREATE INDEX knowledge_user_status ON knowledge(user_id, status, key);

CREATE VIRTUAL TABLE knowledge_fts USING fts5(statement, tokenize = 'unicode61 remove_diacritics 2');

CREATE TABLE tombstones (
    id INTEGER PRIMARY KEY,
    user_id TEXT NOT NULL,
    key TEXT NOT NULL,
    statement TEXT NOT NULL,
    reason TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    candidate_id INTEGER REFERENCES candidates(id),
    knowledge_id INTEGER REFERENCES knowledge(id),
    lifted_at INTEGER,
    lifted_by TEXT,
    lift_reason TEXT
);
CREATE INDEX tombstones_user_key ON tombstones(user_id, lifted_at, key);

CREATE TABLE audit_log (
    id INTEGER PRIMARY KEY,
    at INTEGER NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    user_id TEXT NOT NULL,
    entity TEXT NOT NULL,
    entity_id INTEGER,
    before TEXT,
    after TEXT,
    reason TEXT,
    redacted_at INTEGER
);
CREATE INDEX audit_entity ON audit_log(entity, entity_id, id);
CREATE INDEX audit_user ON audit_log(user_id, id);

CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only: DELETE refused'); END;

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
WHEN NOT (
    OLD.redacted_at IS NULL AND NEW.redacted_at IS NOT NULL
    AND NEW.id = OLD.id AND NEW.at = OLD.at AND NEW.actor = OLD.actor AND NEW.action = OLD.action
    AND NEW.user_id = OLD.user_id AND NEW.entity = OLD.entity AND NEW.entity_id IS OLD.entity_id
    AND NEW.before IS NULL AND NEW.after IS NULL AND NEW.reason IS NULL
)
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only: UPDATE refused'); END;
"""


def _v1(dimensions: int) -> list[str]:
    statements = [s.strip() for s in _split(_V1) if s.strip()]
    statements.append(
        "CREATE VIRTUAL TABLE knowledge_vec USING vec0("
        " knowledge_id INTEGER PRIMARY KEY,"
        " user_id TEXT PARTITION KEY,"
        f" embedding FLOAT[{int(dimensions)}] distance_metric=cosine,"
        " status TEXT, valid_from INTEGER, valid_to INTEGER, created INTEGER, expired INTEGER)"
    )
    statements.append(f"INSERT INTO meta(key, value) VALUES ('embedding_dimensions', '{int(dimensions)}')")
    return statements


def _split(script: str) -> list[str]:
    """Split on ';' at statement ends, keeping trigger bodies (which contain ';') whole."""
    out: list[str] = []
    buf: list[str] = []
    in_trigger = False
    for line in script.splitlines():
        buf.append(line)
        stripped = line.strip().upper()
        if stripped.startswith("CREATE TRIGGER"):
            in_trigger = True
        if in_trigger:
            if stripped.endswith("END;"):
                out.append("\n".join(buf).rstrip().rstrip(";"))
                buf, in_trigger = [], False
        elif stripped.endswith(";"):
            out.append("\n".join(buf).rstrip().rstrip(";"))
            buf = []
    if "".join(buf).strip():
        out.append("\n".join(buf))
    return out


def _v2(dimensions: int) -> list[str]:
    """The FTS index gets a `scope` column holding one token per user (see `store.fts_scope`).

    Why: FTS5 cannot filter on a column of another table inside its index, so a BM25 query scoped
    by joining `knowledge` either ran the MATCH once per fact of the user (the planner's choice
    when the user filter looked selective: 360 ms for a user with 2,000 facts) or ranked every
    matching fact of every user before the join dropped them. With the user's token ANDed into the
    MATCH, FTS5 intersects doclists and ranks only this user's rows."""
    del dimensions
    return [
        "DROP TABLE knowledge_fts",
        "CREATE VIRTUAL TABLE knowledge_fts USING fts5(statement, scope, tokenize = 'unicode61 remove_diacritics 2')",
        "INSERT INTO knowledge_fts(rowid, statement, scope) SELECT id, statement, 'u' || lower(hex(user_id))"
        " FROM knowledge",
    ]


VEC_COLUMNS = "knowledge_id, user_id, embedding, status, valid_from, valid_to, created, expired"
VEC_CHUNK_SIZE = 128


def create_vec_table(dimensions: int) -> str:
    """The vector table as it is since v3; `engine.reembed` re-creates it at another width."""
    return (
        "CREATE VIRTUAL TABLE knowledge_vec USING vec0("
        " knowledge_id INTEGER PRIMARY KEY,"
        " user_id TEXT PARTITION KEY,"
        f" embedding FLOAT[{int(dimensions)}] distance_metric=cosine,"
        " status TEXT, valid_from INTEGER, valid_to INTEGER, created INTEGER, expired INTEGER,"
        f" chunk_size={VEC_CHUNK_SIZE})"
    )


def _v3(dimensions: int) -> list[str]:
    """The vector table is rebuilt with chunks of 128 vectors instead of sqlite-vec's default 1,024.

    Why: sqlite-vec gives every partition (every user) chunks of its own, allocated whole. At
    1,024 slots of 384 floats each user cost at least 1.5 MB, so 1,000 users with 100 facts each
    made a 1.7 GB file; at 128 a user starts at 200 KB, and a KNN over a large user's 22,000
    vectors measured slightly faster (12 ms against 15 ms CPU; 64 slots: 13.5 ms). The rows are
    copied through a plain table because the table must be re-created to change its chunk size."""
    return [
        f"CREATE TABLE knowledge_vec_copy AS SELECT {VEC_COLUMNS} FROM knowledge_vec",
        "DROP TABLE knowledge_vec",
        create_vec_table(dimensions),
        f"INSERT INTO knowledge_vec({VEC_COLUMNS}) SELECT {VEC_COLUMNS} FROM knowledge_vec_copy",
        "DROP TABLE knowledge_vec_copy",
    ]


def _v4(dimensions: int) -> list[str]:
    """A candidate can replace a candidate that is still pending (`supersedes_candidate_id`).

    Why: a batch of weeks of conversation is processed before anyone reviews it, so "I moved to
    Porto" often arrives while "lives in Lisbon" is still a candidate. Without the link both were
    queued as `new` and approving both kept two contradicting facts active."""
    del dimensions
    return [
        "ALTER TABLE candidates ADD COLUMN supersedes_candidate_id INTEGER REFERENCES candidates(id)",
        "CREATE INDEX candidates_chain ON candidates(supersedes_candidate_id)",
    ]


# -- v5: ids from AUTOINCREMENT, nullable confidence, decision notes, valid time closed on supersession

_V5_TABLES = """
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    content TEXT NOT NULL,
    at INTEGER NOT NULL,
    episode_id INTEGER REFERENCES episodes(id)
);
CREATE INDEX messages_unprocessed ON messages(user_id, episode_id, at, id);

CREATE TABLE episodes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL,
    title TEXT NOT NULL,
    narrative TEXT NOT NULL,
    start_at INTEGER,
    end_at INTEGER,
    status TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'processed', 'failed')),
    error TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    claimed_by TEXT,
    claimed_until INTEGER,
    created_at INTEGER NOT NULL
);
CREATE INDEX episodes_user_status ON episodes(user_id, status);

CREATE TABLE extraction_runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    episode_id INTEGER NOT NULL REFERENCES episodes(id),
    user_id TEXT NOT NULL,
    extractor TEXT NOT NULL,
    model TEXT,
    mode TEXT NOT NULL CHECK (mode IN ('predict', 'extract_all', 'cold_start')),
    prediction TEXT NOT NULL DEFAULT '',
    existing_ids TEXT NOT NULL DEFAULT '[]',
    covered TEXT NOT NULL DEFAULT '[]',
    claims INTEGER NOT NULL DEFAULT 0,
    predicted INTEGER NOT NULL DEFAULT 0,
    below_confidence INTEGER NOT NULL DEFAULT 0,
    invalid INTEGER NOT NULL DEFAULT 0,
    tombstoned INTEGER NOT NULL DEFAULT 0,
    duplicates INTEGER NOT NULL DEFAULT 0,
    supersedes_dropped INTEGER NOT NULL DEFAULT 0,
    unsupported INTEGER NOT NULL DEFAULT 0,
    queued INTEGER NOT NULL DEFAULT 0,
    started_at INTEGER NOT NULL,
    finished_at INTEGER,
    duration_ms REAL,
    error TEXT
);
CREATE INDEX runs_episode ON extraction_runs(episode_id);

CREATE TABLE candidates (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL,
    episode_id INTEGER REFERENCES episodes(id),
    run_id INTEGER REFERENCES extraction_runs(id),
    statement TEXT NOT NULL,
    key TEXT NOT NULL,
    evidence TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL CHECK (kind IN ('new', 'update', 'contradiction', 'proposed', 'retraction')),
    supersedes_id INTEGER REFERENCES knowledge(id),
    confidence REAL,
    valid_at INTEGER,
    invalid_at INTEGER,
    unsupported INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected')),
    created_at INTEGER NOT NULL,
    created_by TEXT,
    claimed_by TEXT,
    claimed_until INTEGER,
    decided_by TEXT,
    decided_at INTEGER,
    decision TEXT,
    reason TEXT,
    knowledge_id INTEGER REFERENCES knowledge(id),
    supersedes_candidate_id INTEGER REFERENCES candidates(id),
    CHECK (invalid_at IS NULL OR valid_at IS NULL OR invalid_at > valid_at)
);
CREATE INDEX candidates_queue ON candidates(status, created_at, id);
CREATE INDEX candidates_user ON candidates(user_id, status, key);
CREATE INDEX candidates_chain ON candidates(supersedes_candidate_id);
CREATE INDEX candidates_supersedes ON candidates(supersedes_id, kind, status);

CREATE TABLE knowledge (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL,
    statement TEXT NOT NULL,
    key TEXT NOT NULL,
    candidate_id INTEGER REFERENCES candidates(id),
    episode_id INTEGER REFERENCES episodes(id),
    confidence REAL,
    valid_at INTEGER,
    invalid_at INTEGER,
    created_at INTEGER NOT NULL,
    expired_at INTEGER,
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'superseded', 'retracted')),
    end_reason TEXT,
    superseded_by INTEGER REFERENCES knowledge(id),
    created_by TEXT NOT NULL,
    valid_closed INTEGER NOT NULL DEFAULT 0,
    prior_invalid_at INTEGER,
    CHECK (invalid_at IS NULL OR valid_at IS NULL OR invalid_at > valid_at),
    CHECK ((status = 'active') = (expired_at IS NULL)),
    CHECK (valid_closed = 1 OR prior_invalid_at IS NULL)
);
CREATE INDEX knowledge_user_status ON knowledge(user_id, status, key);

CREATE TABLE tombstones (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL,
    key TEXT NOT NULL,
    statement TEXT NOT NULL,
    reason TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    candidate_id INTEGER REFERENCES candidates(id),
    knowledge_id INTEGER REFERENCES knowledge(id),
    lifted_at INTEGER,
    lifted_by TEXT,
    lift_reason TEXT
);
CREATE INDEX tombstones_user_key ON tombstones(user_id, lifted_at, key);

CREATE TABLE audit_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    user_id TEXT NOT NULL,
    entity TEXT NOT NULL,
    entity_id INTEGER,
    before TEXT,
    after TEXT,
    reason TEXT,
    redacted_at INTEGER,
    note TEXT
);
CREATE INDEX audit_entity ON audit_log(entity, entity_id, id);
CREATE INDEX audit_user ON audit_log(user_id, id);

CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only: DELETE refused'); END;

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
WHEN NOT (
    OLD.redacted_at IS NULL AND NEW.redacted_at IS NOT NULL
    AND NEW.id = OLD.id AND NEW.at = OLD.at AND NEW.actor = OLD.actor AND NEW.action = OLD.action
    AND NEW.user_id = OLD.user_id AND NEW.entity = OLD.entity AND NEW.entity_id IS OLD.entity_id
    AND NEW.before IS NULL AND NEW.after IS NULL AND NEW.reason IS NULL AND NEW.note IS NULL
)
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only: UPDATE refused'); END;
"""

# (table, the columns v4 had, the audit entity whose ids must never come back)
_V5_COPY: tuple[tuple[str, str, str | None], ...] = (
    ("messages", "id, user_id, role, content, at, episode_id", "message"),
    (
        "episodes",
        "id, user_id, title, narrative, start_at, end_at, status, error, attempts, claimed_by,"
        " claimed_until, created_at",
        "episode",
    ),
    (
        "extraction_runs",
        "id, episode_id, user_id, extractor, model, mode, prediction, existing_ids, covered, claims,"
        " predicted, below_confidence, invalid, tombstoned, duplicates, supersedes_dropped, unsupported, queued,"
        " started_at, finished_at, duration_ms, error",
        "extraction_run",
    ),
    (
        "candidates",
        "id, user_id, episode_id, run_id, statement, key, evidence, kind, supersedes_id, confidence,"
        " valid_at, invalid_at, unsupported, status, created_at, created_by, claimed_by, claimed_until, decided_by,"
        " decided_at, decision, reason, knowledge_id, supersedes_candidate_id",
        "candidate",
    ),
    (
        "knowledge",
        "id, user_id, statement, key, candidate_id, episode_id, confidence, valid_at, invalid_at,"
        " created_at, expired_at, status, end_reason, superseded_by, created_by",
        "knowledge",
    ),
    (
        "tombstones",
        "id, user_id, key, statement, reason, created_by, created_at, candidate_id, knowledge_id,"
        " lifted_at, lifted_by, lift_reason",
        "tombstone",
    ),
    ("audit_log", "id, at, actor, action, user_id, entity, entity_id, before, after, reason, redacted_at", None),
)

VEC_COLUMNS_V5 = VEC_COLUMNS + ", still_true, believed_to"


def _v5(dimensions: int) -> list[str]:
    """Every table is rebuilt with AUTOINCREMENT ids; candidate and fact confidence become nullable;
    the audit log gains a `note` column; facts record the valid-time end a supersession replaced;
    the vector table gains two metadata columns for valid-time reads.

    Why AUTOINCREMENT: undo and erasure delete rows, and a plain INTEGER PRIMARY KEY hands the
    largest deleted id to the next insert, which then shows up under the deleted row's audit
    history (an erased message's `capture` row named the next message written). AUTOINCREMENT keeps
    the high-water mark in sqlite_sequence; each sequence starts past every id the table or its
    audit trail ever named, so ids deleted before this migration do not come back either.

    Why nullable confidence: an agent's proposal has no model confidence, and the 1.0 it was given
    made a confidence filter pick proposals first. NULL says "not measured".

    Why `valid_closed` / `prior_invalid_at`: confirming a supersession closes the old fact's valid
    time (invalid_at = the new fact's start). A `known_at` read of a moment before that decision
    must see the interval as it was then, so the end it replaced is kept beside it.

    Why the vector columns: a valid-time read (`at_time` without `known_at`) reads active facts
    plus facts ended because the world changed (superseded, contradicted), never those ended as
    wrong (corrected, retracted). `still_true` (1/0) lets sqlite-vec apply that inside the KNN, and
    `believed_to` (the end as it was while the fact was believed) serves `known_at` reads.

    The rebuild copies each table aside, drops the originals and re-creates them; foreign keys are
    deferred to COMMIT, where every reference resolves again."""
    out = ["PRAGMA defer_foreign_keys = ON"]
    for table, cols, _ in _V5_COPY:
        out.append(f"CREATE TABLE _v5_{table} AS SELECT {cols} FROM {table}")
    for table, _, _ in _V5_COPY:
        out.append(f"DROP TABLE {table}")
    out += [s.strip() for s in _split(_V5_TABLES) if s.strip()]
    for table, cols, entity in _V5_COPY:
        out.append(f"INSERT INTO {table}({cols}) SELECT {cols} FROM _v5_{table}")
        out.append(f"DROP TABLE _v5_{table}")
        out.append(f"DELETE FROM sqlite_sequence WHERE name = '{table}'")
        # the copy of the audit log: it is re-created last, so its copy still stands here
        audited = "0"
        if entity:
            audited = f"coalesce((SELECT max(entity_id) FROM _v5_audit_log WHERE entity = '{entity}'), 0)"
        out.append(
            f"INSERT INTO sqlite_sequence(name, seq) VALUES ('{table}',"
            f" max(coalesce((SELECT max(id) FROM {table}), 0), {audited}))"
        )
    out += [
        f"CREATE TABLE knowledge_vec_copy AS SELECT {VEC_COLUMNS} FROM knowledge_vec",
        "DROP TABLE knowledge_vec",
        "CREATE VIRTUAL TABLE knowledge_vec USING vec0("
        " knowledge_id INTEGER PRIMARY KEY,"
        " user_id TEXT PARTITION KEY,"
        f" embedding FLOAT[{int(dimensions)}] distance_metric=cosine,"
        " status TEXT, valid_from INTEGER, valid_to INTEGER, created INTEGER, expired INTEGER,"
        " still_true INTEGER, believed_to INTEGER,"
        f" chunk_size={VEC_CHUNK_SIZE})",
        f"INSERT INTO knowledge_vec({VEC_COLUMNS_V5})"
        f" SELECT {', '.join('c.' + c.strip() for c in VEC_COLUMNS.split(','))}, {STILL_TRUE_SQL.format(k='k')},"
        " c.valid_to FROM knowledge_vec_copy c JOIN knowledge k ON k.id = c.knowledge_id",
        "DROP TABLE knowledge_vec_copy",
    ]
    return out


def _v6(dimensions: int) -> list[str]:
    """What the gates dropped, kept for curators (`discarded`), and what each run was made with.

    Why: a curator saw only a count per gate, so a real move dropped as "tombstoned" or "predicted"
    was invisible and could not be brought back. Every dropped statement is now a row with its gate
    and what it matched (a fact, a pending candidate or a tombstone), and `queued_candidate_id`
    records a curator's "queue anyway". Runs record the extractor's prompt version beside its model,
    so approval rates can be split by both, and how many out-of-range dates were dropped."""
    del dimensions
    return [
        "CREATE TABLE discarded ("
        " id INTEGER PRIMARY KEY AUTOINCREMENT,"
        " user_id TEXT NOT NULL,"
        " episode_id INTEGER REFERENCES episodes(id),"
        " run_id INTEGER REFERENCES extraction_runs(id),"
        " statement TEXT NOT NULL,"
        " evidence TEXT NOT NULL DEFAULT '',"
        " gate TEXT NOT NULL CHECK (gate IN ('predicted', 'below_confidence', 'invalid', 'tombstoned',"
        " 'duplicate')),"
        " kind TEXT NOT NULL DEFAULT 'new',"
        " confidence REAL,"
        " valid_at INTEGER,"
        " invalid_at INTEGER,"
        " matched_entity TEXT CHECK (matched_entity IN ('knowledge', 'candidate', 'tombstone')),"
        " matched_id INTEGER,"
        " matched_statement TEXT,"
        " created_at INTEGER NOT NULL,"
        " queued_candidate_id INTEGER REFERENCES candidates(id),"
        " queued_by TEXT,"
        " queued_at INTEGER)",
        "CREATE INDEX discarded_user ON discarded(user_id, id)",
        "CREATE INDEX discarded_run ON discarded(run_id)",
        "ALTER TABLE extraction_runs ADD COLUMN prompt_version TEXT",
        "ALTER TABLE extraction_runs ADD COLUMN dates_dropped INTEGER NOT NULL DEFAULT 0",
    ]


def _v9(dimensions: int) -> list[str]:
    """The team tables: second-opinion flags, second reviews and assignments (engine/team.py).

    Why tables of their own and not columns on `candidates`: a candidate can be flagged, withdrawn
    and flagged again, and an approval can be second-reviewed once per fact it created (undo and
    re-approval make a new fact); each of those is a record with its own reviewer, time and note.
    At most one live flag per candidate (partial unique index) and one assignee per user."""
    del dimensions
    return [
        "CREATE TABLE flags ("
        " id INTEGER PRIMARY KEY AUTOINCREMENT,"
        " candidate_id INTEGER NOT NULL REFERENCES candidates(id),"
        " user_id TEXT NOT NULL,"
        " flagged_by TEXT NOT NULL,"
        " note TEXT,"
        " lean TEXT CHECK (lean IN ('approve', 'reject')),"
        " flagged_at INTEGER NOT NULL,"
        " withdrawn_at INTEGER,"
        " withdrawn_by TEXT)",
        "CREATE UNIQUE INDEX flags_live ON flags(candidate_id) WHERE withdrawn_at IS NULL",
        "CREATE INDEX flags_user ON flags(user_id)",
        "CREATE TABLE second_reviews ("
        " id INTEGER PRIMARY KEY AUTOINCREMENT,"
        " candidate_id INTEGER NOT NULL REFERENCES candidates(id),"
        " knowledge_id INTEGER NOT NULL REFERENCES knowledge(id),"
        " user_id TEXT NOT NULL,"
        " first_reviewer TEXT NOT NULL,"
        " first_decision TEXT NOT NULL,"
        " reviewer TEXT NOT NULL,"
        " verdict TEXT NOT NULL CHECK (verdict IN ('agree', 'overturn', 'disagree')),"
        " reason TEXT,"
        " note TEXT,"
        " decided_at INTEGER NOT NULL,"
        " UNIQUE (candidate_id, knowledge_id),"
        " CHECK (reviewer != first_reviewer))",
        "CREATE INDEX second_reviews_user ON second_reviews(user_id)",
        "CREATE TABLE assignments ("
        " id INTEGER PRIMARY KEY AUTOINCREMENT,"
        " user_id TEXT NOT NULL UNIQUE,"
        " reviewer TEXT NOT NULL,"
        " assigned_at INTEGER NOT NULL,"
        " assigned_by TEXT NOT NULL)",
        "CREATE INDEX assignments_reviewer ON assignments(reviewer)",
    ]


def _v12(dimensions: int) -> list[str]:
    """Special categories (engine/categories.py): `candidates.category`, the GDPR article 9 class
    (or criminal record) of a candidate's statement, NULL for none.

    Why a column and not a computed label: the workstation filters the queue on it, and a review
    policy must refuse to approve a special-category candidate with one check (`is_special`); the
    model's own label, when it gave one, cannot be recomputed later. Candidates queued before this
    version keep NULL (the rules run at insert, not as SQL)."""
    del dimensions
    return [
        "ALTER TABLE candidates ADD COLUMN category TEXT",
        "CREATE INDEX candidates_pending_category ON candidates(category) WHERE status = 'pending'",
        # the offline extractor's rule that made it, and each run's calibration (confidence)
        "ALTER TABLE candidates ADD COLUMN rule TEXT",
        "ALTER TABLE extraction_runs ADD COLUMN calibration TEXT",
    ]


# migration: value-model
def _v13(dimensions: int) -> list[str]:
    """`candidates.marks`: what the intake noticed about a candidate and left to a person
    (engine.gate; engine.models.Mark): it looks like fact #N, it is near tombstone #N, it may
    replace fact #N. A JSON list, NULL for none: marks are read with the row and shown beside it,
    never queried on their own, so one column serves where a table would need a join on every read
    of the queue. Candidates queued before this version have none."""
    del dimensions
    return ["ALTER TABLE candidates ADD COLUMN marks TEXT"]


# migration: policies
def _v14(dimensions: int) -> list[str]:
    """Review policies (issue 28): an index for their reads of the audit log (verdicts, the secret
    sample's draws, scope events), which filter on action and actor."""
    del dimensions
    return ["CREATE INDEX audit_action_actor ON audit_log(action, actor, entity_id)"]


MIGRATIONS: dict[int, Callable[[int], list[str]]] = {
    1: _v1,
    2: _v2,
    3: _v3,
    4: _v4,
    5: _v5,
    6: _v6,
    9: _v9,
    12: _v12,
    13: _v13,  # migration: value-model
    14: _v14,  # migration: policies
}
