import os

from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

DATABASE_URL = os.environ["DATABASE_URL"]

engine = create_async_engine(
    DATABASE_URL,
    pool_size=int(os.environ.get("DB_POOL_SIZE", "5")),
    max_overflow=0,
)
SessionLocal = async_sessionmaker(engine, expire_on_commit=False)

# Reads that can be a moment behind go to the read replica, when one is configured.
DATABASE_REPLICA_URL = os.environ.get("DATABASE_REPLICA_URL")

ReplicaSession = None
if DATABASE_REPLICA_URL:
    replica_engine = create_async_engine(
        DATABASE_REPLICA_URL,
        pool_size=int(os.environ.get("DB_POOL_SIZE", "5")),
        max_overflow=0,
    )
    ReplicaSession = async_sessionmaker(replica_engine, expire_on_commit=False)
