"""Table definitions: the single source the migrations are checked against.

Every primary key and every index leads with ``user_id`` so the schema can be
distributed by user (Citus) when one server is not enough. ``memory_meta`` is the
one exception: a single row describing the whole database.
"""

from __future__ import annotations

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    Computed,
    DateTime,
    Float,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    SmallInteger,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, BIT, JSONB, TSVECTOR

DEFAULT_EMBEDDING_DIM = 384  # all-MiniLM-L6-v2, the default embedder
BELIEF_STATUSES = ("active", "superseded", "invalidated", "merged")
JOB_STATUSES = ("pending", "running", "done", "failed")
EPISODE_ROLES = ("user", "assistant")
# Tables keyed by user_id: erasing a user deletes their rows from each one.
USER_TABLES = (
    "memory_users",
    "beliefs",
    "belief_events",
    "belief_sources",
    "belief_terms",
    "belief_twins",
    "episodes",
    "episode_terms",
    "memory_jobs",
)
OPS = (
    "ADD",
    "CONFIRM",
    "UPDATE",
    "SUPERSEDE",
    "INVALIDATE",
    "MERGE",
    "CORRECT",
    "FORGET",
    "IMPORT",
)

_NOW = text("now()")


def _id(table: str) -> Column[int]:
    """A row id from the table's own bigint sequence (revision 0005: not an identity
    column, which Citus could not undistribute or reshard)."""
    return Column(
        "id",
        BigInteger,
        nullable=False,
        autoincrement=False,
        server_default=text(f"nextval('{table}_id_seq'::regclass)"),
    )


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def build_metadata() -> MetaData:
    """The full schema at the newest revision.

    ``memory_meta`` records the model and dimension the database was created for;
    each belief's vector names its own model (``embedding_model``), of any dimension.
    """
    md = MetaData()

    Table(
        "memory_meta",
        md,
        Column("id", SmallInteger, primary_key=True, autoincrement=False),
        Column("embedding_model", Text, nullable=True),
        Column("embedding_dim", Integer, nullable=False),
        Column("created_at", DateTime(timezone=True), nullable=False, server_default=_NOW),
        CheckConstraint("id = 1", name="memory_meta_single_row"),
    )

    Table(
        "memory_users",
        md,
        Column("user_id", Text, nullable=False),
        Column("version", BigInteger, nullable=False, server_default=text("0")),
        Column("erased_at", DateTime(timezone=True), nullable=True),
        Column("created_at", DateTime(timezone=True), nullable=False, server_default=_NOW),
        Column("updated_at", DateTime(timezone=True), nullable=False, server_default=_NOW),
        Column("active_beliefs", Integer, nullable=False, server_default=text("0")),
        Column("episodes", Integer, nullable=False, server_default=text("0")),
        Column("timezone", Text, nullable=True),  # the IANA zone the user's sessions last gave
        PrimaryKeyConstraint("user_id", name="memory_users_pkey"),
    )

    Table(
        "belief_terms",
        md,
        Column("user_id", Text, nullable=False),
        Column("lexeme", Text, nullable=False),
        Column("beliefs", Integer, nullable=False),
        PrimaryKeyConstraint("user_id", "lexeme", name="belief_terms_pkey"),
        CheckConstraint("beliefs >= 0", name="belief_terms_beliefs_nonnegative"),
    )

    Table(
        "beliefs",
        md,
        Column("user_id", Text, nullable=False),
        _id("beliefs"),
        Column("content", Text, nullable=False),
        Column("norm_content", Text, nullable=False),
        Column("key", Text, nullable=True),
        Column("status", Text, nullable=False, server_default=text("'active'")),
        Column("confidence", Float, nullable=False, server_default=text("0.8")),
        Column("valid_from", DateTime(timezone=True), nullable=False, server_default=_NOW),
        Column("valid_to", DateTime(timezone=True), nullable=True),
        Column("created_at", DateTime(timezone=True), nullable=False, server_default=_NOW),
        Column("updated_at", DateTime(timezone=True), nullable=False, server_default=_NOW),
        Column("last_confirmed_at", DateTime(timezone=True), nullable=True),
        Column("version", Integer, nullable=False, server_default=text("1")),
        Column("superseded_by", BigInteger, nullable=True),
        Column("merged_into", BigInteger, nullable=True),
        Column("embedding", Vector(), nullable=True),  # any dimension: see embedding_model
        Column("embedding_model", Text, nullable=True),
        Column(
            "tsv",
            TSVECTOR,
            Computed("to_tsvector('english'::regconfig, content)", persisted=True),
        ),
        PrimaryKeyConstraint("user_id", "id", name="beliefs_pkey"),
        CheckConstraint(_in("status", BELIEF_STATUSES), name="beliefs_status_valid"),
        CheckConstraint("confidence >= 0 AND confidence <= 1", name="beliefs_confidence_range"),
        CheckConstraint("version >= 1", name="beliefs_version_positive"),
        CheckConstraint(
            "(embedding IS NULL) = (embedding_model IS NULL)", name="beliefs_embedding_model_named"
        ),
        Index("beliefs_user_status_idx", "user_id", "status"),
        Index("beliefs_user_key_idx", "user_id", "key"),
        Index(
            "beliefs_user_active_content_idx",
            "user_id",
            "norm_content",
            postgresql_where=text("status = 'active'"),
        ),
        Index("beliefs_user_tsv_idx", "user_id", "tsv", postgresql_using="gin"),
    )

    Table(
        "belief_events",
        md,
        Column("user_id", Text, nullable=False),
        _id("belief_events"),
        Column("op", Text, nullable=False),
        Column("belief_id", BigInteger, nullable=True),
        Column("related_ids", ARRAY(BigInteger), nullable=False, server_default=text("'{}'")),
        Column("before", JSONB, nullable=True),
        Column("after", JSONB, nullable=True),
        Column("reason", Text, nullable=True),
        Column("job_id", BigInteger, nullable=True),
        Column("created_at", DateTime(timezone=True), nullable=False, server_default=_NOW),
        PrimaryKeyConstraint("user_id", "id", name="belief_events_pkey"),
        CheckConstraint(_in("op", OPS), name="belief_events_op_valid"),
        Index("belief_events_user_belief_idx", "user_id", "belief_id"),
    )

    Table(
        "belief_sources",
        md,
        Column("user_id", Text, nullable=False),
        _id("belief_sources"),
        Column("belief_id", BigInteger, nullable=False),
        Column("session_id", Text, nullable=True),
        Column("item_ref", Text, nullable=True),
        Column("evidence", Text, nullable=True),
        Column("observed_at", DateTime(timezone=True), nullable=False, server_default=_NOW),
        Column("extractor", Text, nullable=True),
        Column("job_id", BigInteger, nullable=True),
        Column("created_at", DateTime(timezone=True), nullable=False, server_default=_NOW),
        Column("episode_id", BigInteger, nullable=True),
        PrimaryKeyConstraint("user_id", "id", name="belief_sources_pkey"),
        Index("belief_sources_user_belief_idx", "user_id", "belief_id"),
        Index(
            "belief_sources_user_episode_idx",
            "user_id",
            "episode_id",
            postgresql_where=text("episode_id IS NOT NULL"),
        ),
    )

    Table(
        "episodes",
        md,
        Column("user_id", Text, nullable=False),
        _id("episodes"),
        Column("session_id", Text, nullable=False),
        Column("job_id", BigInteger, nullable=False),
        Column("message", SmallInteger, nullable=False),
        Column("passage", SmallInteger, nullable=False, server_default=text("0")),
        Column("item_ref", Text, nullable=True),
        Column("role", Text, nullable=False),
        Column("content", Text, nullable=False),
        Column("context", Text, nullable=True),
        Column("said_at", DateTime(timezone=True), nullable=False),
        Column("embedding", Vector(), nullable=True),
        Column("embedding_model", Text, nullable=True),
        Column(
            "tsv",
            TSVECTOR,
            Computed(
                "setweight(to_tsvector('english'::regconfig, content), 'A') || "
                "setweight(to_tsvector('english'::regconfig, coalesce(context, '')), 'D')",
                persisted=True,
            ),
        ),
        Column("hidden_at", DateTime(timezone=True), nullable=True),
        Column("created_at", DateTime(timezone=True), nullable=False, server_default=_NOW),
        Column(  # the sign bits of the vector: see episodes_user_bits_idx
            "embedding_bits",
            BIT(varying=True),
            Computed("binary_quantize(embedding)", persisted=True),
        ),
        PrimaryKeyConstraint("user_id", "id", name="episodes_pkey"),
        UniqueConstraint(
            "user_id", "job_id", "message", "passage", name="episodes_user_job_message_passage_key"
        ),
        CheckConstraint(_in("role", EPISODE_ROLES), name="episodes_role_valid"),
        CheckConstraint(
            "(embedding IS NULL) = (embedding_model IS NULL)", name="episodes_embedding_model_named"
        ),
        Index("episodes_user_said_idx", "user_id", "said_at"),
        Index("episodes_user_session_idx", "user_id", "session_id", "said_at"),
        Index("episodes_user_tsv_idx", "user_id", "tsv", postgresql_using="gin"),
        # A user's bits read from the index alone (engine/episode_candidates.py).
        Index(
            "episodes_user_bits_idx",
            "user_id",
            "embedding_model",
            "said_at",  # a question naming days reads those days' bits as one range
            postgresql_include=["id", "embedding_bits"],
            postgresql_where=text("hidden_at IS NULL"),
        ),
    )

    Table(
        "belief_twins",
        md,
        Column("user_id", Text, nullable=False),
        Column("belief_id", BigInteger, nullable=False),
        Column("twin_id", BigInteger, nullable=False),
        PrimaryKeyConstraint("user_id", "belief_id", "twin_id", name="belief_twins_pkey"),
    )

    Table(
        "episode_terms",
        md,
        Column("user_id", Text, nullable=False),
        Column("lexeme", Text, nullable=False),
        Column("episodes", Integer, nullable=False),
        PrimaryKeyConstraint("user_id", "lexeme", name="episode_terms_pkey"),
        CheckConstraint("episodes >= 0", name="episode_terms_episodes_nonnegative"),
    )

    Table(
        "memory_jobs",
        md,
        Column("user_id", Text, nullable=False),
        _id("memory_jobs"),
        Column("session_id", Text, nullable=False),
        Column("payload", JSONB, nullable=False),
        Column("status", Text, nullable=False, server_default=text("'pending'")),
        Column("attempts", Integer, nullable=False, server_default=text("0")),
        Column("last_error", Text, nullable=True),
        Column("lease_owner", Text, nullable=True),
        Column("lease_until", DateTime(timezone=True), nullable=True),
        Column("run_after", DateTime(timezone=True), nullable=False, server_default=_NOW),
        Column("idempotency_key", Text, nullable=False),
        Column("usage", JSONB, nullable=True),
        Column("notes", Text, nullable=True),
        Column("created_at", DateTime(timezone=True), nullable=False, server_default=_NOW),
        Column("updated_at", DateTime(timezone=True), nullable=False, server_default=_NOW),
        PrimaryKeyConstraint("user_id", "id", name="memory_jobs_pkey"),
        UniqueConstraint("user_id", "idempotency_key", name="memory_jobs_user_idempotency_key"),
        CheckConstraint(_in("status", JOB_STATUSES), name="memory_jobs_status_valid"),
        CheckConstraint("attempts >= 0", name="memory_jobs_attempts_nonnegative"),
        Index("memory_jobs_user_status_idx", "user_id", "status", "id"),
    )
    return md
