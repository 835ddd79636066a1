"""The /cost page's state, as its query string says it: the GET /api/cost query, read by the
one rule for numbers (app/web/pages.py), and `measure` (time dense attention now)."""

from typing import Literal

from pydantic import ConfigDict

from app.features.cost.schemas import CostQuery
from app.web.pages import PageForm


class CostForm(PageForm, CostQuery):
    model_config = ConfigDict(extra="ignore", frozen=True)

    measure: Literal["1"] | None = None  # a link's one-off request, never part of a state

    def request(self) -> CostQuery:
        """The GET /api/cost query of this state."""
        return CostQuery(**self.model_dump(exclude={"measure"}, exclude_none=True))
