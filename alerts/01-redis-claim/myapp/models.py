from datetime import datetime

from sqlalchemy import BigInteger, Boolean, DateTime, Integer, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class Creator(Base):
    """Someone who publishes an app on the platform and pays for it in credits."""

    __tablename__ = "creators"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    name: Mapped[str] = mapped_column(String(128))
    credits: Mapped[int] = mapped_column(Integer)
    app_published: Mapped[bool] = mapped_column(Boolean, default=False)


class Service(Base):
    """A dependency the platform watches; `status` is 'up' or 'down'."""

    __tablename__ = "services"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    status: Mapped[str] = mapped_column(String(16), default="up")


class BackgroundJob(Base):
    """A build or export the platform runs for a creator; unfinished for too long means stuck."""

    __tablename__ = "background_jobs"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    name: Mapped[str] = mapped_column(String(128))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class Workspace(Base):
    """A creator's workspace and the state of its sandbox, as last synced from the provider."""

    __tablename__ = "workspaces"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    sandbox_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    state: Mapped[str] = mapped_column(String(16), default="unknown")
    synced_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
