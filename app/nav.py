"""The app's pages, in the order the navigation bar shows them: (path, label)."""

NAV: list[tuple[str, str]] = [
    ("/", "Head lab"),
    ("/heads", "Heads and position"),
    ("/cost", "Cost calculator"),
    ("/kernel", "Inside the kernel"),
    ("/model", "A trained model"),
    ("/docs", "API"),
]
