"""Pure context building and projection: path -> context -> provider messages."""

from sessionstore.context.build import SessionContext, build_session_context, entry_to_message
from sessionstore.context.project import Projection, bash_execution_to_text, convert_to_llm, project

__all__ = [
    "Projection",
    "SessionContext",
    "bash_execution_to_text",
    "build_session_context",
    "convert_to_llm",
    "entry_to_message",
    "project",
]
