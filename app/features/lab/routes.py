"""The head lab: POST /api/attention, and the page / with its JSON and CSV twins.

The lab is one state (app/features/lab/form.py) shown four ways: the page, its live fragment
(`?fragment=1`), and the JSON (the /api/attention result) and CSV downloads.
"""

from typing import Annotated

from fastapi import APIRouter, Body, Depends, Request
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from app.core.budget import check_answer
from app.core.rules import WORKED_EXAMPLE_REQUEST
from app.features.lab.download import stages_csv
from app.features.lab.form import LabForm
from app.features.lab.page import LabHead, lab_head, lab_page, shuffle_page
from app.features.lab.schemas import AttentionRequest, AttentionResult
from app.features.lab.service import (
    BUDGET_FIELDS,
    HeadInputs,
    answer_bytes,
    compute_head,
    resolve_inputs,
)
from app.settings import Settings
from app.web.cache import cacheable
from app.web.deps import ERRORS, SettingsDep
from app.web.pages import respond
from app.web.responses import JSONResponse

api = APIRouter(prefix="/api", tags=["api"])
pages = APIRouter(include_in_schema=False)

WORKED_EXAMPLE = {
    "worked": {
        "summary": 'The worked example "The cat sleeps" (the same as {})',
        "value": WORKED_EXAMPLE_REQUEST,
    }
}
AttentionBody = Annotated[AttentionRequest, Body(openapi_examples=WORKED_EXAMPLE)]
# A head whose answer is this small is computed in about a millisecond: on the event loop,
# where handing it to a worker thread and back would cost about a third as much again. A
# larger one goes to the thread pool, so the loop keeps serving the other connections.
INLINE_ANSWER_BYTES = 64_000


@api.post(
    "/attention",
    response_model=AttentionResult,
    responses=ERRORS,
    dependencies=[Depends(cacheable)],
)
async def attention(req: AttentionBody, settings: SettingsDep) -> Response:
    """One head, every stage: Q, K, V, Q·Kᵀ, scaled, masked, softmax weights, output."""
    inputs = resolve_inputs(req, settings)
    if answer_bytes(inputs) <= INLINE_ANSWER_BYTES:
        return answer(inputs, settings)
    return await run_in_threadpool(answer, inputs, settings)


def answer(inputs: HeadInputs, settings: Settings) -> Response:
    return JSONResponse(compute_head(inputs, settings))


@pages.get("/", response_class=HTMLResponse, dependencies=[Depends(cacheable)])
def lab(request: Request, settings: SettingsDep) -> HTMLResponse:
    return respond(request, lab_page(*LabForm.read(request.query_params), settings))


@pages.get("/shuffle", response_class=HTMLResponse, dependencies=[Depends(cacheable)])
def shuffle(request: Request, settings: SettingsDep) -> HTMLResponse:
    """The lab's state with its tokens shuffled: does attention notice the order?"""
    return respond(request, shuffle_page(*LabForm.read(request.query_params), settings))


def problems_json(head: LabHead) -> JSONResponse:
    detail = [
        {"loc": ["query", p.field], "msg": p.message, "type": "value_error"} for p in head.problems
    ]
    return JSONResponse({"detail": detail}, status_code=422)


@pages.get("/lab.json")
def lab_json(request: Request, settings: SettingsDep) -> JSONResponse:
    """The lab's state as the /api/attention result."""
    head = lab_head(*LabForm.read(request.query_params), settings)
    return problems_json(head) if head.problems else JSONResponse(head.result)


@pages.get("/lab.csv")
def lab_csv(request: Request, settings: SettingsDep) -> Response:
    """Every stage of the lab's state, one number per line."""
    head = lab_head(*LabForm.read(request.query_params), settings)
    if head.problems:
        return problems_json(head)
    result = head.result
    size = AttentionResult.csv_bytes(len(result.tokens), result.d_model, result.d_k, result.d_v)
    check_answer(size, settings.answer_budget_bytes, BUDGET_FIELDS, source="query")
    headers = {"Content-Disposition": 'attachment; filename="attention-lab.csv"'}
    return Response(stages_csv(result), media_type="text/csv", headers=headers)
