"""A throwaway HTTP app for the access tests: fails on demand, answers malformed JSON on demand.

Run as ``python flaky_app.py PORT``. Routes (all POST bodies are ``{"instances": [...]}``):

- ``/fail/{n}/{status}/{name}/predict``: the first ``n`` requests to this path answer HTTP
  ``status`` (``Retry-After: 0`` on 429), later ones answer correctly;
- ``/slow/{ms}/predict``: answers after ``ms`` milliseconds;
- ``/bad/{kind}/predict``: a malformed answer of the given kind;
- ``/ok/predict``: decision = instance["x"] > 0, score = sigmoid(x), logit = x;
- ``GET /count/{path}``: requests received on a path; ``GET /health``.
"""

from __future__ import annotations

import asyncio
import math
import sys
from collections import Counter
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse

app = FastAPI()
COUNTS: Counter[str] = Counter()


def _answers(instances: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for inst in instances:
        x = float(inst.get("x", 0.0))
        out.append({"decision": int(x > 0), "score": 1 / (1 + math.exp(-x)), "logit": x})
    return out


@app.get("/health")
async def health() -> dict[str, str]:
    return {"status": "ok"}


@app.get("/count/{path:path}")
async def count(path: str) -> dict[str, int]:
    return {"count": COUNTS["/" + path]}


@app.post("/ok/predict")
async def ok(request: Request) -> Any:
    COUNTS[request.url.path] += 1
    body = await request.json()
    return {"predictions": _answers(body["instances"])}


@app.post("/fail/{n}/{status}/{name}/predict")
async def fail(n: int, status: int, name: str, request: Request) -> Any:
    COUNTS[request.url.path] += 1
    if COUNTS[request.url.path] <= n:
        headers = {"Retry-After": "0"} if status == 429 else {}
        return JSONResponse({"detail": "injected"}, status_code=status, headers=headers)
    body = await request.json()
    return {"predictions": _answers(body["instances"])}


@app.post("/slow/{ms}/predict")
async def slow(ms: int, request: Request) -> Any:
    COUNTS[request.url.path] += 1
    await asyncio.sleep(ms / 1000)
    body = await request.json()
    return {"predictions": _answers(body["instances"])}


@app.post("/bad/{kind}/predict")
async def bad(kind: str, request: Request) -> Any:
    COUNTS[request.url.path] += 1
    body = await request.json()
    preds = _answers(body["instances"])
    if kind == "missing":
        del preds[0]["decision"]
    elif kind == "nan":
        return PlainTextResponse(
            '{"predictions": [' + ",".join('{"decision": NaN}' for _ in preds) + "]}",
            media_type="application/json",
        )
    elif kind == "string":
        preds[0]["decision"] = "yes"
    elif kind == "two":
        preds[0]["decision"] = 2
    elif kind == "score":
        preds[0]["score"] = 1.5
    elif kind == "length":
        preds = preds[:-1]
    elif kind == "nokey":
        return {"answers": preds}
    elif kind == "notjson":
        return PlainTextResponse("<html>oops</html>")
    elif kind == "labels":
        return {"predictions": [{"label": ">50K" if p["decision"] else "<=50K"} for p in preds]}
    elif kind == "nested":
        return {"output": {"results": [{"p": p["score"]} for p in preds]}}
    elif kind == "400":
        return JSONResponse({"detail": "bad instance"}, status_code=400)
    return {"predictions": preds}


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
