"""The head lab: POST /api/attention, and the page / with its JSON and CSV twins.

The lab is one state (app/features/lab/state.py) rendered four ways: the page, the fragment
its script swaps in (`fragment=1`), and the CSV and JSON downloads.
"""

from typing import Annotated

from fastapi import APIRouter, Body, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.responses import Response

from app.core.budget import check_answer
from app.core.rules import WORKED_EXAMPLE_REQUEST
from app.features.lab.download import stages_csv
from app.features.lab.page import LabPage, lab_context, lab_page
from app.features.lab.schemas import AttentionRequest, AttentionResult
from app.features.lab.service import BUDGET_FIELDS, compute_attention
from app.features.lab.state import LabParams
from app.web.cache import cacheable
from app.web.classroom import Classroom
from app.web.deps import ERRORS, PageQuery, SettingsDep, page_query
from app.web.pages import INPUT_STATUS, PAGE_STATE
from app.web.responses import JSONResponse
from app.web.templating import templates

api = APIRouter(prefix="/api", tags=["api"])
pages = APIRouter(include_in_schema=False)

WORKED_EXAMPLE = {
    "worked": {
        "summary": 'The worked example "The cat sleeps" (the same as {})',
        "value": WORKED_EXAMPLE_REQUEST,
    }
}
AttentionBody = Annotated[AttentionRequest, Body(openapi_examples=WORKED_EXAMPLE)]


@api.post(
    "/attention",
    response_model=AttentionResult,
    responses=ERRORS,
    dependencies=[Depends(cacheable)],
)
def attention(req: AttentionBody, settings: SettingsDep) -> JSONResponse:
    """One head, every stage: Q, K, V, Q·Kᵀ, scaled, masked, softmax weights, output."""
    return JSONResponse(compute_attention(req, settings))


# The lab's query, read on the event loop; each route computes its state where it runs (a
# sync route in the page thread, the CSV in the work thread), so that a page costs one hop
# to a thread, not one for the state and another for the page: every hop waits its turn
# behind the class's other pages.
LabQuery = Annotated[PageQuery, page_query(LabParams)]


def problems_json(page: LabPage) -> JSONResponse:
    detail = [{"loc": ["query"], "msg": p, "type": "value_error"} for p in page.problems]
    return JSONResponse({"detail": detail}, status_code=422)


@pages.get("/", response_class=HTMLResponse, dependencies=[Depends(cacheable)])
def lab(request: Request, query: LabQuery, settings: SettingsDep, fragment: str = "") -> Response:
    """The head lab. A button's `action` redirects to the state it produced; bad input
    renders the page with its problems next to the controls (422). The live fragment answers
    200 either way: a half-typed number is a normal moment of editing, not a failed request
    (its messages carry data-problems). `fragment=results` leaves the controls out."""
    page = lab_page(query.items, settings)
    if fragment:
        context = lab_context(page, with_editor=fragment != "results")
        headers = {PAGE_STATE: page.query} if page.ok else {INPUT_STATUS: "422"}
        return templates.TemplateResponse(request, "lab/_fragment.html", context, headers=headers)
    if page.action and page.ok:
        target = Classroom.from_request(request).location(f"/?{page.query}")
        return RedirectResponse(target, status_code=303)
    status = 200 if page.ok else 422
    return templates.TemplateResponse(
        request, "lab/lab.html", lab_context(page), status_code=status
    )


@pages.get("/lab.json")
def lab_json(query: LabQuery, settings: SettingsDep) -> JSONResponse:
    """The lab's state as the /api/attention result."""
    page = lab_page(query.items, settings)
    return JSONResponse(page.result) if page.ok else problems_json(page)


@pages.get("/lab.csv")
def lab_csv(query: LabQuery, settings: SettingsDep) -> Response:
    """Every stage of the lab's state, one number per line."""
    page = lab_page(query.items, settings)
    if not page.ok:
        return problems_json(page)
    result = page.result
    size = AttentionResult.csv_bytes(len(result.tokens), result.d_model, result.d_k, result.d_v)
    check_answer(size, settings.answer_budget_bytes, BUDGET_FIELDS, source="query")
    headers = {"Content-Disposition": 'attachment; filename="attention-lab.csv"'}
    return Response(stages_csv(result), media_type="text/csv", headers=headers)
