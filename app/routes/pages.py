"""HTML routes: parse → compute → render, with the same service calls as the API.

The head lab is one state (app/labstate.py) rendered four ways: the page, the fragment its
script swaps in (`fragment=1`), and the CSV and JSON downloads.
"""

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.responses import Response

from app.cache import cacheable
from app.config import Settings, get_settings
from app.cost_views import cost_page_context
from app.kernel_views import kernel_context
from app.labstate import LabPage, lab_page
from app.responses import JSONResponse
from app.routes.api import MeasurementsDep
from app.templating import templates
from app.views import heads_page, lab_context, model_page, stages_csv

router = APIRouter(include_in_schema=False)
SettingsDep = Annotated[Settings, Depends(get_settings)]


def lab_state(request: Request, settings: SettingsDep) -> LabPage:
    return lab_page(request.query_params.multi_items(), settings)


LabDep = Annotated[LabPage, Depends(lab_state)]


def problems_json(page: LabPage) -> JSONResponse:
    detail = [{"loc": ["query"], "msg": p, "type": "value_error"} for p in page.problems]
    return JSONResponse({"detail": detail}, status_code=422)


@router.get("/", response_class=HTMLResponse, dependencies=[Depends(cacheable)])
def lab(request: Request, page: LabDep, fragment: str = "") -> Response:
    """The head lab. A button's `action` redirects to the state it produced; bad input
    renders the page with its problems next to the controls (422). The live fragment answers
    200 either way: a half-typed number is a normal moment of editing, not a failed request
    (its messages carry data-problems). `fragment=results` leaves the controls out."""
    if fragment:
        context = {**lab_context(page), "with_editor": fragment != "results"}
        return templates.TemplateResponse(request, "_lab_fragment.html", context)
    if page.action and page.ok:
        return RedirectResponse(f"/?{page.query}", status_code=303)
    status = 200 if page.ok else 422
    return templates.TemplateResponse(request, "lab.html", lab_context(page), status_code=status)


@router.get("/lab.json")
def lab_json(page: LabDep) -> JSONResponse:
    """The lab's state as the /api/attention result."""
    return JSONResponse(page.result) if page.ok else problems_json(page)


@router.get("/lab.csv")
def lab_csv(page: LabDep) -> Response:
    """Every stage of the lab's state, one number per line."""
    if not page.ok:
        return problems_json(page)
    headers = {"Content-Disposition": 'attachment; filename="attention-lab.csv"'}
    return Response(stages_csv(page.result), media_type="text/csv", headers=headers)


@router.get("/heads", response_class=HTMLResponse)
def heads(request: Request, settings: SettingsDep) -> HTMLResponse:
    context = heads_page(request.query_params, settings)
    return templates.TemplateResponse(request, "heads.html", context)


@router.get("/heads/fragment", response_class=HTMLResponse)
def heads_fragment(request: Request, settings: SettingsDep) -> HTMLResponse:
    """The results part of /heads alone: what the page swaps in on a live update."""
    context = heads_page(request.query_params, settings)
    return templates.TemplateResponse(request, "_heads_results.html", context)


@router.get("/cost", response_class=HTMLResponse)
def cost(request: Request, measurements: MeasurementsDep) -> HTMLResponse:
    context, status = cost_page_context(dict(request.query_params), measurements)
    return templates.TemplateResponse(request, "cost.html", context, status_code=status)


@router.get("/kernel", response_class=HTMLResponse)
def kernel(request: Request, page: LabDep, settings: SettingsDep) -> Response:
    """Tiled attention and cached decoding of the lab's state, each at the step in the URL."""
    context = kernel_context(page, request.query_params, settings)
    status = 422 if context["messages"]["problems"] else 200
    return templates.TemplateResponse(request, "kernel.html", context, status_code=status)


@router.get("/model", response_class=HTMLResponse)
def model(request: Request, settings: SettingsDep) -> HTMLResponse:
    """A trained model's heads on the sentence in the URL: ?text=…&layer=…&head=…"""
    context, status = model_page(dict(request.query_params), settings)
    return templates.TemplateResponse(request, "model.html", context, status_code=status)
