"""The built-in datasets: UCI Adult, Fisher's Iris, a synthetic census and synthetic clinic
visits (many rows per patient), with the public domain of every column and where it comes from.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import special

from dashboard.data.model import ColumnDomain, LoadedDataset
from datasets_synthetic import teaching, visits
from dpcore.checks import check_int
from dpcore.contributions import PrivacyUnit

#: The user-facing names of the built-in datasets, in menu order.
BUILTIN_DATASETS = ("Adult (UCI census income)", "Iris", "Synthetic census",
                    "Clinic visits (synthetic)")
#: The small teaching datasets (a class, a village, a close race): offered after the others,
#: and what a session opening on a teaching page starts with (``dashboard.teaching``).
TEACHING_DATASETS = teaching.NAMES
#: Largest synthetic census.
MAX_SYNTHETIC_ROWS = 1_000_000
#: Largest synthetic clinic-visits table (rows = visits).
MAX_VISITS_ROWS = visits.MAX_ROWS
#: The built-ins whose rows are not people: the person-id column the privacy unit starts from.
PERSON_IDS = {BUILTIN_DATASETS[3]: visits.PERSON_ID}
#: The contribution bound the visits data starts with: the generator declares that most
#: patients come 1-3 times (88 %), so 5 rows keep almost every patient whole. Public by
#: construction (it comes from the generator, not from the table).
VISITS_DEFAULT_MAX_ROWS = 5

DATA_DIR = Path(__file__).resolve().parents[2] / "data"


# --------------------------------------------------------------------------------------------
# Built-in data

_ADULT_SOURCE = (
    "UCI Adult (Census Income): 1994 US Census extract by Barry Becker and Ronny Kohavi, "
    "training and test splits joined (48,842 rows). Licence CC BY 4.0. Becker, B. & Kohavi, "
    "R. (1996), UCI Machine Learning Repository, https://doi.org/10.24432/C5XW20"
)
_ADULT_NAMES = "UCI adult.names"

# The category lists, in the order adult.names lists them.
_ADULT_CATEGORIES: dict[str, tuple[str, ...]] = {
    "workclass": (
        "Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov",
        "State-gov", "Without-pay", "Never-worked",
    ),
    "education": (
        "Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm",
        "Assoc-voc", "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th", "Doctorate",
        "5th-6th", "Preschool",
    ),
    "marital_status": (
        "Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed",
        "Married-spouse-absent", "Married-AF-spouse",
    ),
    "occupation": (
        "Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
        "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical",
        "Farming-fishing", "Transport-moving", "Priv-house-serv", "Protective-serv",
        "Armed-Forces",
    ),
    "relationship": (
        "Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried",
    ),
    "race": ("White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"),
    "sex": ("Female", "Male"),
    "native_country": (
        "United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany",
        "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece", "South", "China", "Cuba",
        "Iran", "Honduras", "Philippines", "Italy", "Poland", "Jamaica", "Vietnam", "Mexico",
        "Portugal", "Ireland", "France", "Dominican-Republic", "Laos", "Ecuador", "Taiwan",
        "Haiti", "Columbia", "Hungary", "Guatemala", "Nicaragua", "Scotland", "Thailand",
        "Yugoslavia", "El-Salvador", "Trinadad&Tobago", "Peru", "Hong", "Holand-Netherlands",
    ),
    "income": ("<=50K", ">50K"),
}

# fnlwgt has no domain on purpose: it is the survey weight (how many people a row stands for),
# not an attribute of the person, and adult.names documents no upper bound for it.
_ADULT_NUMERIC: dict[str, ColumnDomain] = {
    "age": ColumnDomain(
        "numeric", 17, 90, integer=True, unit="years",
        source="UCI adult.names (rows with age > 16); the 1994 CPS top-codes age at 90; "
               "bins: the usual 10-year age bands (chosen without looking at the data)",
        bins=(17.0, 25.0, 35.0, 45.0, 55.0, 65.0, 90.0)),
    "education_num": ColumnDomain(
        "numeric", 1, 16, integer=True, unit="level",
        source="UCI adult.names: 16 education levels, numbered 1 (Preschool) to 16 (Doctorate)"),
    "capital_gain": ColumnDomain(
        "numeric", 0, 99_999, integer=True, unit="USD",
        source="CPS income top-code: capital gains are recorded up to 99,999 USD"),
    # adult.names says only "capital-loss: continuous"; the CPS imputes capital losses from IRS
    # data (Census tax model) and documents no top-code for them. The upper bound is the
    # file's own maximum, so it is flagged as read off the data wherever it is used.
    "capital_loss": ColumnDomain(
        "numeric", 0, 4_356, integer=True, unit="USD", from_data=True,
        source="READ OFF THE DATA: 4,356 is the largest value in the UCI file (3 rows hold "
               "it); no top-code is documented for capital losses"),
    "hours_per_week": ColumnDomain(
        "numeric", 1, 99, integer=True, unit="hours/week",
        source="UCI adult.names (rows with hours > 0); the CPS field holds at most 99"),
}

_ADULT_COLUMNS = (
    "age", "workclass", "fnlwgt", "education", "education_num", "marital_status",
    "occupation", "relationship", "race", "sex", "capital_gain", "capital_loss",
    "hours_per_week", "native_country", "income",
)

_IRIS_SOURCE = (
    "Fisher's Iris data (Fisher 1936; Anderson 1935), as distributed by the UCI Machine "
    "Learning Repository (copy shipped with plotly). Licence CC BY 4.0. "
    "https://doi.org/10.24432/C56C76"
)
_IRIS_MEASUREMENTS = ("sepal_length", "sepal_width", "petal_length", "petal_width")
_IRIS_SPECIES = ("setosa", "versicolor", "virginica")

# The toy census of the geometric-mechanism teaching example: category lists and shares.
_CENSUS_SEX = (("M", "F"), (0.5, 0.5))
_CENSUS_MARRIED = (("M", "W", "S", "D", "N"), (0.478, 0.057, 0.109, 0.019, 0.337))
_CENSUS_OCCUPATION = (
    ("Statistician", "Economist", "Geographer", "IT Specialist", "Unicorn Wrangler"),
    (0.3, 0.3, 0.2, 0.19, 0.01),
)
_CENSUS_AGE = (45.0, 10.0, 0, 120)                      # mean, sd, domain lower, upper
_CENSUS_LOG10_EARNINGS = (4.6, 0.35, 3.0, 6.0)          # mean, sd, truncation lower, upper
_CENSUS_GENERATOR = "declared by the synthetic census generator"


def load_builtin(name: str, *, census_rows: int = 1000, seed: int = 0) -> LoadedDataset:
    """Load one of :data:`BUILTIN_DATASETS` with its public column domains.

    Parameters
    ----------
    name : str
        One of ``BUILTIN_DATASETS``.
    census_rows, seed : int
        Size (rows) and seed of the synthetic census or clinic visits (ignored for the
        other datasets).

    Returns
    -------
    LoadedDataset
        Every column of Adult except ``fnlwgt`` (a survey weight with no documented bound)
        has a domain; every column of Iris and of the synthetic census has one.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    if name in TEACHING_DATASETS:
        frame = teaching.TABLES[name]()
        source = (f"{name[:name.index(' (')]}: made-up people for teaching, generated by "
                  f"Epsilon Lab from a fixed seed ({len(frame):,} rows; see data/README.md). "
                  "No real people.")
        return LoadedDataset(name, frame, _teaching_domains(name), [], source,
                             key=f"builtin:{name}:{len(frame)}")
    if name == BUILTIN_DATASETS[0]:
        frame = _read_adult()
        return LoadedDataset(name, frame, _adult_domains(), [], _ADULT_SOURCE,
                             key=f"builtin:{name}:{len(frame)}")
    if name == BUILTIN_DATASETS[1]:
        frame = _read_iris()
        return LoadedDataset(name, frame, _iris_domains(), [], _IRIS_SOURCE,
                             key=f"builtin:{name}:{len(frame)}")
    if name == BUILTIN_DATASETS[2]:
        census_rows = check_int("census_rows", census_rows, minimum=1,
                                maximum=MAX_SYNTHETIC_ROWS)
        frame = synthetic_census(census_rows, seed=seed)
        source = (
            f"Synthetic census generated by Epsilon Lab ({len(frame):,} rows, seed {seed}): "
            "categories and shares of the classic geometric-mechanism census example. "
            "No real people."
        )
        return LoadedDataset(name, frame, _census_domains(), [], source,
                             key=f"builtin:{name}:{len(frame)}")
    if name == BUILTIN_DATASETS[3]:
        rows = check_int("census_rows", census_rows, minimum=1, maximum=MAX_VISITS_ROWS)
        frame = visits.clinic_visits(rows, seed=seed)
        source = (
            f"Synthetic clinic visits generated by Epsilon Lab ({len(frame):,} visits of "
            f"{frame[visits.PERSON_ID].max():,} patients, seed {seed}): one row per visit, "
            "heavy-tailed visits per patient (most 1-3, a few over 100), rare diagnoses. "
            f"No real people. The person id is {visits.PERSON_ID}."
        )
        return LoadedDataset(name, frame, _visits_domains(), [], source,
                             key=f"builtin:{name}:{len(frame)}",
                             declared_unit=PrivacyUnit(visits.PERSON_ID, VISITS_DEFAULT_MAX_ROWS))
    raise ValueError(f"name must be one of {', '.join(BUILTIN_DATASETS + TEACHING_DATASETS)}; "
                     f"got {name!r}")


def _teaching_domains(name: str) -> dict[str, ColumnDomain]:
    # Every domain is the generator's own (public by construction), never read off the table.
    said = "declared by the teaching-data generator"
    frame_columns = {
        teaching.CLASS: {
            "favourite_subject": teaching.SUBJECTS, "class_rep_vote": teaching.CLASS_CANDIDATES,
            "walks_to_school": teaching.YES_NO,
            "exam_score": (0, 100, True, "points"), "hours_of_sleep": (3, 12, False, "hours"),
        },
        teaching.VILLAGE: {
            "work": teaching.VILLAGE_WORK, "has_car": teaching.YES_NO,
            "age": (0, 100, True, "years"), "household_size": (1, 8, True, "people"),
            "income": (*teaching.VILLAGE_INCOME_BOUNDS, True, "USD/year"),
        },
        teaching.RACE: {
            "vote": teaching.RACE_CANDIDATES, "district": teaching.RACE_DISTRICTS,
            "age_band": teaching.RACE_AGE_BANDS,
        },
    }[name]
    domains: dict[str, ColumnDomain] = {}
    for column, spec in frame_columns.items():
        if isinstance(spec[0], str):
            domains[column] = ColumnDomain("categorical", categories=spec, source=said)
        else:
            lower, upper, integer, unit = spec
            domains[column] = ColumnDomain("numeric", lower, upper, integer=integer, unit=unit,
                                           source=said)
    return domains


def _adult_domains() -> dict[str, ColumnDomain]:
    domains: dict[str, ColumnDomain] = {}
    for column in _ADULT_COLUMNS:
        if column in _ADULT_NUMERIC:
            domains[column] = _ADULT_NUMERIC[column]
        elif column in _ADULT_CATEGORIES:
            domains[column] = ColumnDomain(
                "categorical", categories=_ADULT_CATEGORIES[column], source=_ADULT_NAMES)
    return domains


def _read_adult() -> pd.DataFrame:
    path = DATA_DIR / "adult.csv.gz"
    dtypes = {c: ("category" if c in _ADULT_CATEGORIES else "int64") for c in _ADULT_COLUMNS}
    frame = pd.read_csv(path, dtype=dtypes, na_values=[""], keep_default_na=False,
                        compression="gzip")
    if tuple(frame.columns) != _ADULT_COLUMNS:
        raise RuntimeError(f"{path} does not have the expected Adult columns")
    for column, declared in _ADULT_CATEGORIES.items():
        # Fixing the categories while reading would silently turn an unexpected value into
        # NaN; read, check, then declare the full list.
        observed = set(frame[column].cat.categories)
        unexpected = observed - set(declared)
        if unexpected:
            raise RuntimeError(f"{path}: column {column} has undocumented values {unexpected}")
        frame[column] = frame[column].cat.set_categories(declared)
    return frame


def _iris_domains() -> dict[str, ColumnDomain]:
    size = ColumnDomain("numeric", 0, 10, unit="cm",
                        source="public: iris sepals and petals are under 10 cm")
    domains = {column: size for column in _IRIS_MEASUREMENTS}
    domains["species"] = ColumnDomain("categorical", categories=_IRIS_SPECIES,
                                      source="Fisher (1936): three species")
    return domains


def _read_iris() -> pd.DataFrame:
    path = DATA_DIR / "iris.csv"
    dtypes: dict[str, object] = {c: "float64" for c in _IRIS_MEASUREMENTS}
    dtypes["species"] = pd.CategoricalDtype(list(_IRIS_SPECIES))
    frame = pd.read_csv(path, dtype=dtypes)
    if frame["species"].isna().any():
        raise RuntimeError(f"{path}: a species outside {_IRIS_SPECIES}")
    return frame


def _census_domains() -> dict[str, ColumnDomain]:
    _, _, age_lower, age_upper = _CENSUS_AGE
    return {
        "Sex": ColumnDomain("categorical", categories=_CENSUS_SEX[0], source=_CENSUS_GENERATOR),
        "Age": ColumnDomain("numeric", age_lower, age_upper, integer=True, unit="years",
                            source=_CENSUS_GENERATOR),
        "Married": ColumnDomain("categorical", categories=_CENSUS_MARRIED[0],
                                source=_CENSUS_GENERATOR),
        "Earnings": ColumnDomain("numeric", 1_000, 1_000_000, integer=True, unit="USD",
                                 source=_CENSUS_GENERATOR),
        "Occupation": ColumnDomain("categorical", categories=_CENSUS_OCCUPATION[0],
                                   source=_CENSUS_GENERATOR),
    }


def _visits_domains() -> dict[str, ColumnDomain]:
    said = "declared by the clinic-visits generator"
    return {
        "age_band": ColumnDomain("categorical", categories=visits.AGE_BANDS, source=said),
        "diagnosis": ColumnDomain(
            "categorical", categories=tuple(visits.DIAGNOSES),
            source=said + " (ICD-10 three-character codes, a public classification)"),
        "cost": ColumnDomain("numeric", *map(float, visits.COST_BOUNDS), integer=True,
                             unit="USD", source=said + " (a visit's cost is clipped to it)",
                             bins=(0.0, 50.0, 100.0, 200.0, 500.0, 1_000.0, 5_000.0,
                                   50_000.0)),
    }


def synthetic_census(rows: int = 1000, *, seed: int = 0) -> pd.DataFrame:
    """A synthetic census of ``rows`` people, the same for the same seed.

    Columns and how they are drawn (independently, from ``numpy.random.default_rng(seed)``):

    - ``Sex``: M or F, 50/50.
    - ``Age``: Normal(45, 10) rounded to whole years and clipped to the domain [0, 120]
      (clipping almost never happens: 0 is 4.5 standard deviations away).
    - ``Married``: M (married), W (widowed), S (separated), D (divorced), N (never married)
      with shares 0.478 / 0.057 / 0.109 / 0.019 / 0.337.
    - ``Earnings``: 10**x dollars, rounded to whole dollars, where x ~ Normal(4.6, 0.35)
      truncated to [3, 6] (median about 40,000 USD); so earnings lie in [1,000, 1,000,000].
    - ``Occupation``: Statistician / Economist / Geographer / IT Specialist / Unicorn Wrangler
      with shares 0.3 / 0.3 / 0.2 / 0.19 / 0.01.

    Categorical columns are pandas Categorical holding every declared category, even one that
    drew no rows. The category lists and shares are those of the classic census example used
    to teach the geometric mechanism.

    Parameters
    ----------
    rows : int
        Number of people, 1 to 1,000,000.
    seed : int
        Seed of the generator (any non-negative integer).

    Returns
    -------
    pandas.DataFrame
    """
    n = check_int("rows", rows, minimum=1, maximum=MAX_SYNTHETIC_ROWS)
    seed = check_int("seed", seed, minimum=0)
    rng = np.random.default_rng(seed)

    def categorical(spec: tuple[tuple[str, ...], tuple[float, ...]]) -> pd.Categorical:
        names, shares = spec
        codes = rng.choice(len(names), size=n, p=np.asarray(shares) / np.sum(shares))
        return pd.Categorical.from_codes(codes, categories=list(names))

    sex = categorical(_CENSUS_SEX)
    mean, sd, lower, upper = _CENSUS_AGE
    age = np.clip(np.rint(rng.normal(mean, sd, size=n)), lower, upper).astype(np.int64)
    married = categorical(_CENSUS_MARRIED)
    earnings = _truncated_log10_earnings(rng, n)
    occupation = categorical(_CENSUS_OCCUPATION)
    return pd.DataFrame({"Sex": sex, "Age": age, "Married": married, "Earnings": earnings,
                         "Occupation": occupation})


def _truncated_log10_earnings(rng: np.random.Generator, n: int) -> NDArray[np.int64]:
    # Inverse-CDF sampling of the truncated normal: uniform between the CDF values of the
    # truncation points, mapped back through the normal quantile. Exact, no rejection loop.
    mean, sd, lower, upper = _CENSUS_LOG10_EARNINGS
    cdf_lo = special.ndtr((lower - mean) / sd)
    cdf_hi = special.ndtr((upper - mean) / sd)
    x = mean + sd * special.ndtri(rng.uniform(cdf_lo, cdf_hi, size=n))
    x = np.clip(x, lower, upper)  # guards the last ulp of the quantile function
    return np.rint(10.0**x).astype(np.int64)


