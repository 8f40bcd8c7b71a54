import os

from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

DATABASE_URL = os.environ["DATABASE_URL"]

engine = create_async_engine(
    DATABASE_URL,
    pool_size=int(os.environ.get("DB_POOL_SIZE", "5")),
    max_overflow=0,
)
SessionLocal = async_sessionmaker(engine, expire_on_commit=False)
