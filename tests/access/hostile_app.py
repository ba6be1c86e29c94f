"""A hostile model server for the access tests: each route lies in one documented way.

Run as ``python hostile_app.py PORT``. Every honest answer is decision = ``x > 0`` for a record
``{"x": ...}``. The lie is chosen by the model name (v2, v1) or the path (mlflow, http-json):

- KServe v2 (``/v2/models/{model}[/versions/{v}][/infer]``, always version "1"; declared output ``predict`` INT64 ``[-1, 1]``):
  ``honest``; ``wronglen`` (2n values, shape still ``[n, 1]``); ``dupnames`` (``predict`` twice,
  the second all 0); ``wrongtype`` (FP32 where INT64 is declared); ``badshape`` (shape ``[n, 2]``
  with n values); ``othermodel`` (``model_name`` another model); ``swap`` (``model_version``
  "1" on the first request, "2" after); ``nulls`` (BYTES labels with a null).
- KServe v1 (``/v1/models/{model}[:predict]``): ``honest``; ``swap`` (the version status changes
  after the first predict); ``nulls`` (labels with a null and a number).
- MLflow (``/{kind}/invocations``): ``nulls`` (labels with a null and NaN).
- http-json (``/h/{kind}/predict``): ``ok``; ``big`` (5 MB of padding); ``gzipbomb`` (20 MB of
  padding gzip-compressed to about 20 KB); ``drip`` (1 byte every 0.2 s, forever); ``late`` (a first chunk after 0.8 s, then 30 s of
  silence); ``ratelimit``
  (200 with ``x-ratelimit-remaining-requests: 0`` and a 300 s reset); ``redirect`` (302 with
  valid answers as its body); ``echo401`` / ``echo429`` (the Authorization header echoed in
  the error); ``echodecision`` (the Authorization header as the decision).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import sys
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

app = FastAPI()
COUNTS: Counter[str] = Counter()


def _dec(xs: list[Any]) -> list[int]:
    return [int(float(x) > 0) for x in xs]


@app.get("/health")
async def health() -> dict[str, str]:
    return {"status": "ok"}


@app.get("/v2/health/ready")
async def ready() -> dict[str, bool]:
    return {"ready": True}


@app.get("/v2/models/{model}")
@app.get("/v2/models/{model}/versions/{version}")
async def v2_meta(model: str) -> dict[str, Any]:
    dtype = "BYTES" if model == "nulls" else "INT64"
    return {"name": model, "versions": ["1"], "platform": "hostile",
            "inputs": [{"name": "x", "datatype": "FP64", "shape": [-1, 1]}],
            "outputs": [{"name": "predict", "datatype": dtype, "shape": [-1, 1]}]}


@app.post("/v2/models/{model}/infer")
@app.post("/v2/models/{model}/versions/{asked}/infer")
async def v2_infer(model: str, request: Request) -> Any:
    COUNTS[model] += 1
    body = await request.json()
    xs = next(i["data"] for i in body["inputs"] if i["name"] == "x")
    n = len(xs)
    dec: list[Any] = _dec(xs)
    out: dict[str, Any] = {"name": "predict", "datatype": "INT64", "shape": [n, 1], "data": dec}
    outputs = [out]
    name, version = model, "1"
    if model == "wronglen":  # every decision 1 then 0: read as n x 2 probabilities, ties -> 0
        out["data"] = [v for d in dec for v in (d, 1 - d)]
    elif model == "dupnames":
        outputs = [out, {**out, "data": [0] * n}]
    elif model == "wrongtype":
        out["datatype"] = "FP32"
    elif model == "badshape":
        out["shape"] = [n, 2]
    elif model == "othermodel":
        name = "another-model"
    elif model == "swap":
        version = "1" if COUNTS[model] == 1 else "2"
        if version == "2":
            out["data"] = [1 - d for d in dec]
    elif model == "nulls":
        out.update(datatype="BYTES", data=[">50K" if d else "<=50K" for d in dec])
        out["data"][0] = None
    return {"model_name": name, "model_version": version, "outputs": outputs}


@app.get("/v1/models/{model}")
async def v1_status(model: str) -> dict[str, Any]:
    version = "2" if model == "swap" and COUNTS["v1" + model] > 1 else "1"
    return {"model_version_status": [{"version": version, "state": "AVAILABLE"}]}


@app.post("/v1/models/{model}:predict")
async def v1_predict(model: str, request: Request) -> Any:
    COUNTS["v1" + model] += 1
    body = await request.json()
    dec: list[Any] = _dec([row[0] for row in body["instances"]])
    if model == "nulls":
        dec = [">50K" if d else "<=50K" for d in dec]
        dec[0], dec[1] = None, 0.5
    return {"predictions": dec}


@app.post("/{kind}/invocations")
async def mlflow(kind: str, request: Request) -> Any:
    body = await request.json()
    labels = [">50K" if d else "<=50K" for d in _dec([r[0] for r in body["dataframe_split"]["data"]])]
    parts = [json.dumps(v) for v in labels]
    if kind == "nulls":
        parts[0], parts[1] = "null", "NaN"
    return Response('{"predictions": [' + ", ".join(parts) + "]}", media_type="application/json")


_BOMB: bytes | None = None


@app.post("/h/{kind}/predict")
async def http_json(kind: str, request: Request) -> Any:
    COUNTS["h" + kind] += 1
    body = await request.json()
    preds = [{"decision": d} for d in _dec([r.get("x", 0) for r in body["instances"]])]
    ok = {"predictions": preds}
    auth = request.headers.get("authorization", "")
    if kind == "big":
        return {**ok, "pad": " " * 5_000_000}
    if kind == "deep":  # nested deeper than Python's JSON parser recurses
        return Response(b"[" * 100_000 + b"]" * 100_000, media_type="application/json")
    if kind == "gzipbomb":
        global _BOMB
        if _BOMB is None:
            _BOMB = gzip.compress(json.dumps({**ok, "pad": " " * 20_000_000}).encode(), 9)
        return Response(_BOMB, media_type="application/json",
                        headers={"Content-Encoding": "gzip"})
    if kind == "drip":
        async def drip() -> AsyncIterator[bytes]:
            yield b'{"predictions": '
            while True:
                await asyncio.sleep(0.2)
                yield b" "

        return StreamingResponse(drip(), media_type="application/json")
    if kind == "late":
        async def late() -> AsyncIterator[bytes]:
            await asyncio.sleep(0.8)  # a first chunk just inside a 1 s deadline, then silence
            yield b'{"predictions": '
            await asyncio.sleep(30)
            yield b"[]}"

        return StreamingResponse(late(), media_type="application/json")
    if kind == "ratelimit":
        return JSONResponse(ok, headers={"x-ratelimit-remaining-requests": "0",
                                         "x-ratelimit-reset-requests": "300s"})
    if kind == "redirect":
        return JSONResponse(ok, status_code=302, headers={"Location": "http://example.invalid/"})
    if kind == "echo401":
        return JSONResponse({"detail": f"invalid credentials: {auth}"}, status_code=401)
    if kind == "echo429":
        return JSONResponse({"error": {"message": f"slow down, {auth}"}}, status_code=429,
                            headers={"Retry-After": "0"})
    if kind == "echodecision":
        return {"predictions": [{"decision": auth} for _ in preds]}
    return ok


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
