"""The number of people on the pages: offered on Noisy statistics only under a person-id unit,
its sensitivity 1 whatever the unit's max rows ("how many patients", not "how many visits")."""

from __future__ import annotations

import numpy as np

from dashboard.data import true_answers
from dashboard.kinds.base import RowsPage
from dpcore.queries import QueryAnswer
from engine import RowsPerPerson


class PeoplePage(RowsPage):
    name = "people"
    label = "Number of people"
    noun = "number of people"
    # max rows never moves it (every person keeps a row): the bounds-cost panel has nothing
    # to break down
    breaks_down = False
    no_breakdown = ("The unit's max rows never move the number of people (every person keeps "
                    "at least one row, and one person changes it by at most 1 whatever their "
                    "rows): its error is the noise alone.")

    def offered_on(self, loaded, unit=None):
        return unit is not None and unit.person_column is not None

    def describe(self, column):
        return "number of people"

    def sensitivity_words(self, plan, neighbours):
        return "1", (f"{neighbours.who} changes the number of people by at most 1, whatever "
                     "their number of rows")

    def true_answer(self, data, spec):
        if spec.contribution is None:
            raise ValueError("a number of people needs a person-id column: choose one in the "
                             "privacy unit on the Data page")
        agg = true_answers.relation_of(data).answer(RowsPerPerson(spec.contribution.person))
        return QueryAnswer(np.asarray(float(agg.total_people)), 1.0, 1.0, True,
                           description="number of people")


PAGE = PeoplePage()
