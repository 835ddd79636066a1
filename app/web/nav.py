"""The app's pages, in the order the navigation bar shows them: (path, label).

Labels are marked for translation here and translated where the bar is drawn.
"""

from app.core.i18n import N_

NAV: list[tuple[str, str]] = [
    ("/", N_("Head lab")),
    ("/walkthrough", N_("Walk-through")),
    ("/heads", N_("Heads and position")),
    ("/cost", N_("Cost calculator")),
    ("/kernel", N_("Inside the kernel")),
    ("/model", N_("A trained model")),
    ("/decoder", N_("A model that writes")),
    ("/lessons", N_("Lessons")),
    ("/docs", N_("API")),
]
