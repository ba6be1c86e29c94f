"""Black-box model access: backends, the persistent response cache, budgets and retries."""

from fairprobe.access.base import Answer, AnswerBatch, Backend, TransientAccessError

__all__ = ["Answer", "AnswerBatch", "Backend", "TransientAccessError"]
