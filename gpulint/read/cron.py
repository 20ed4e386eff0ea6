"""How often a cron schedule fires per month: the five-field schedules of Kubernetes CronJobs (crontab(5)).

A leaf module. ``runs_per_month("0 2 * * *")`` is 30.4 (a daily run, averaged over a 365-day year's months);
anything it cannot read (a timezone prefix other than CRON_TZ/TZ, names it does not know, seconds fields) is None,
so the caller stays with what it knew.
"""
from __future__ import annotations

import datetime as _dt

__all__ = ["runs_per_month"]

_MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
           "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
_NAMES = {"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10,
          "nov": 11, "dec": 12, "sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}
_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))


def _number(text: str) -> int:
    return _NAMES[text.lower()] if text.lower() in _NAMES else int(text)


def _field(text: str, lo: int, hi: int) -> set[int] | None:
    values: set[int] = set()
    for part in text.split(","):
        base, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if step < 1:
            return None
        if base == "*":
            start, end = lo, hi
        elif "-" in base:
            a, b = base.split("-", 1)
            start, end = _number(a), _number(b)
        else:
            start = _number(base)
            end = hi if step_text else start
        if not (lo <= start <= hi and lo <= end <= hi) or start > end:
            return None
        values.update(range(start, end + 1, step))
    return values


def runs_per_month(schedule: str) -> float | None:
    """Average runs per month of ``schedule`` over a 365-day year, or None when it cannot be read or never fires."""
    if not isinstance(schedule, str):
        return None
    text = schedule.strip()
    if text.split(" ", 1)[0].startswith(("CRON_TZ=", "TZ=")):  # a timezone does not change how often it fires
        text = text.split(" ", 1)[1].strip() if " " in text else ""
    text = _MACROS.get(text.lower(), text)
    parts = text.split()
    if len(parts) != 5:
        return None
    try:
        fields = [_field(p, lo, hi) for p, (lo, hi) in zip(parts, _RANGES)]
    except (ValueError, KeyError):
        return None
    if any(f is None or not f for f in fields):
        return None
    minutes, hours, days, months, weekdays = fields
    weekdays = {d % 7 for d in weekdays}  # 7 is Sunday too
    # crontab(5): when both day of month and day of week are restricted, a day matching either one runs
    dom_any, dow_any = parts[2].startswith("*"), parts[4].startswith("*")
    day = _dt.date(2025, 1, 1)  # any non-leap year: the average month of 365 days
    matching_days = 0
    for _ in range(365):
        in_dom, in_dow = day.day in days, (day.isoweekday() % 7) in weekdays
        if day.month in months and ((in_dom and in_dow) if (dom_any or dow_any) else (in_dom or in_dow)):
            matching_days += 1
        day += _dt.timedelta(days=1)
    runs = round(matching_days * len(hours) * len(minutes) / 12, 2)
    return runs or None  # a date that never comes (31 February) sizes nothing
