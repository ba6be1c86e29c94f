"""A spy model endpoint for the audit CLI tests: records every request and every field it gets.

Run as ``python spy_app.py PORT``. ``POST /predict`` (``{"instances": [...]}``) answers
decision = ``age >= 40`` (score 0.9 / 0.1); ``POST /biased`` the same but a malformed decision
for half of the records with ``race == "Black"`` (odd ages); ``GET /health`` reports ``{"model": "spy-v1"}``.
``GET /spy`` returns ``{"requests": n, "fields": [...sorted field names seen...],
"instances": n}`` (the ``/spy`` requests and ``GET /schema`` lookups, which are free metadata, are
not counted as requests); ``POST /spy/reset`` clears it.
"""

from __future__ import annotations

import sys
from typing import Any

import uvicorn
from fastapi import FastAPI, Request

app = FastAPI()
STATE: dict[str, Any] = {"requests": 0, "fields": set(), "instances": 0}


@app.middleware("http")
async def count(request: Request, call_next: Any) -> Any:
    if request.url.path == "/schema":  # free metadata (--url reads declared inputs), not a query
        STATE["schema"] = STATE.get("schema", 0) + 1
    elif not request.url.path.startswith("/spy"):
        STATE["requests"] += 1
    return await call_next(request)


@app.get("/health")
async def health() -> dict[str, str]:
    return {"status": "ok", "model": "spy-v1"}


@app.post("/biased")
@app.post("/audit/predict")  # the platform's path, without its /schema
@app.post("/predict")
async def predict(request: Request) -> dict[str, Any]:
    body = await request.json()
    out = []
    for inst in body["instances"]:
        STATE["fields"].update(inst)
        STATE["instances"] += 1
        d = int(float(inst.get("age", 0)) >= 40)
        if request.url.path == "/biased" and inst.get("race") == "Black" and inst["age"] % 2:
            out.append({"decision": "cannot say"})  # garbles half of one group's answers
            continue
        out.append({"decision": d, "score": 0.9 if d else 0.1})
    return {"predictions": out}


@app.get("/spy")
async def spy() -> dict[str, Any]:
    return {**STATE, "fields": sorted(STATE["fields"])}


@app.post("/spy/reset")
async def reset() -> dict[str, str]:
    STATE.update(requests=0, fields=set(), instances=0)
    return {"status": "reset"}


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
