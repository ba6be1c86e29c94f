"""A KServe v1 / TensorFlow Serving REST endpoint over a scikit-learn model file, for the tests.

Run as ``python v1_app.py PORT MODEL.joblib NAME col1,col2,...``. The shapes are TF-Serving's
documented REST API (``GET /v1/models/NAME`` answers the version status; ``POST
/v1/models/NAME:predict`` takes ``{"instances": [[...], ...]}`` rows in the given column order
and answers ``{"predictions": [[p0, p1], ...]}``, the model's ``predict_proba``). TensorFlow
Serving itself is not a Python package, so this real HTTP server stands in for it.
"""

from __future__ import annotations

import sys
from typing import Any

import joblib
import pandas as pd
import uvicorn
from fastapi import FastAPI, HTTPException, Request

PORT, PATH, NAME, COLS = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4].split(",")
MODEL = joblib.load(PATH)
app = FastAPI()


@app.get("/v1/models/{name}")
async def status(name: str) -> dict[str, Any]:
    if name != NAME:
        raise HTTPException(404, f"Servable not found for request: Latest({name})")
    return {"model_version_status": [
        {"version": "1", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}]}


@app.post("/v1/models/{name}:predict")
async def predict(name: str, request: Request) -> dict[str, Any]:
    if name != NAME:
        raise HTTPException(404, f"Servable not found for request: Latest({name})")
    body = await request.json()
    frame = pd.DataFrame(body["instances"], columns=COLS)
    return {"predictions": MODEL.predict_proba(frame).tolist()}


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
