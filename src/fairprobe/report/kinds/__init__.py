"""One adapter per result kind: a result document (part) -> a report section."""
