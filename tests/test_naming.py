"""One vocabulary: inflection round-trips on the table names real sources use, snake_case and slugs."""

from __future__ import annotations

import pytest

from factory.naming import format_id, is_plural, plural, singular, slugify, snake_case, split_words, title_from_slug

# (entity, table): names the bundled catalog infers, then names of OpenAPI component schemas
# (Okta, Onfido, Conjur, the OpenAPI examples), then the irregular and tricky ones.
TABLES = [
    ("account", "accounts"),
    ("adjustment", "adjustments"),
    ("appointment", "appointments"),
    ("attendee", "attendees"),
    ("booking", "bookings"),
    ("branch", "branches"),
    ("company", "companies"),
    ("course", "courses"),
    ("delivery_order", "delivery_orders"),
    ("enrollment", "enrollments"),
    ("expense", "expenses"),
    ("expense_report", "expense_reports"),
    ("holding", "holdings"),
    ("invoice", "invoices"),
    ("issue", "issues"),
    ("lab_order", "lab_orders"),
    ("leave_request", "leave_requests"),
    ("mailing_list", "mailing_lists"),
    ("medication", "medications"),
    ("menu_item", "menu_items"),
    ("pay_run", "pay_runs"),
    ("payslip", "payslips"),
    ("portfolio", "portfolios"),
    ("prescription", "prescriptions"),
    ("pull_request", "pull_requests"),
    ("purchase_order", "purchase_orders"),
    ("redemption", "redemptions"),
    ("reply", "replies"),
    ("repository", "repositories"),
    ("reservation", "reservations"),
    ("room_type", "room_types"),
    ("school_class", "school_classes"),
    ("service", "services"),
    ("stock_item", "stock_items"),
    ("supplier_item", "supplier_items"),
    ("text_message", "text_messages"),
    ("vet_visit", "vet_visits"),
    ("warehouse", "warehouses"),
    ("work_order", "work_orders"),
    ("access_policy", "access_policies"),
    ("authorization_server_policy_rule", "authorization_server_policy_rules"),
    ("behavior_rule_velocity", "behavior_rule_velocities"),
    ("integration_capability", "integration_capabilities"),
    ("json_web_key", "json_web_keys"),
    ("o_auth2_client_secret", "o_auth2_client_secrets"),
    ("principal_rate_limit_entity", "principal_rate_limit_entities"),
    ("user_factor_push", "user_factor_pushes"),
    ("watchlist_monitor_match", "watchlist_monitor_matches"),
    ("gcp_authenticator_status", "gcp_authenticator_statuses"),
    ("stream_status", "stream_statuses"),
    ("applicant_consent", "applicant_consents"),
    ("live_photo", "live_photos"),
    ("passkey", "passkeys"),
    ("check", "checks"),
    ("pet", "pets"),
    ("category", "categories"),
    ("address", "addresses"),
    ("status", "statuses"),
    ("person", "people"),
    ("hero", "heroes"),
    ("box", "boxes"),
    ("analysis", "analyses"),
    ("diagnosis", "diagnoses"),
    ("bus", "buses"),
    ("campus", "campuses"),
    ("class", "classes"),
    ("house", "houses"),
    ("quiz", "quizzes"),
    ("buzz", "buzzes"),
    ("movie", "movies"),
    ("menu", "menus"),
    ("sku", "skus"),
    ("shelf", "shelves"),
    ("child", "children"),
    ("criterion", "criteria"),
    ("response", "responses"),
    ("day", "days"),
    ("cache", "caches"),
]
UNCOUNTABLE = [
    "data",
    "metadata",
    "media",
    "news",
    "series",
    "species",
    "inventory",
    "stock",
    "staff",
    "feedback",
    "equipment",
    "results_feedback",
    "well_known_org_metadata",
    "facial_similarity_report_media",
]


@pytest.mark.parametrize(("one", "many"), TABLES)
def test_singular_and_plural_round_trip(one: str, many: str) -> None:
    assert plural(one) == many
    assert singular(many) == one
    assert singular(one) == one
    assert plural(many) == many
    assert is_plural(many) and not is_plural(one)


@pytest.mark.parametrize("word", UNCOUNTABLE)
def test_uncountable_nouns_stay(word: str) -> None:
    assert plural(word) == word
    assert singular(word) == word
    assert not is_plural(word)


@pytest.mark.parametrize(
    ("one", "many"),
    [
        ("ledger entry", "ledger entries"),
        ("KYC status", "KYC statuses"),
        ("SKU", "SKUs"),
        ("ID", "IDs"),
        ("Person", "People"),
    ],
)
def test_inflection_of_words_for_people(one: str, many: str) -> None:
    assert plural(one) == many
    assert singular(many) == one


@pytest.mark.parametrize(
    ("name", "snake"),
    [
        ("findPetsByStatus", "find_pets_by_status"),
        ("Pet-Store", "pet_store"),
        ("HTTPServer", "http_server"),
        ("getHTTPServer", "get_http_server"),
        ("listPullRequests", "list_pull_requests"),
        ("OAuth2ClientSecret", "o_auth2_client_secret"),
        ("createUserFactor", "create_user_factor"),
        ("issues_list", "issues_list"),
        ("GET /pets/{petId}", "get_pets_pet_id"),
        ("  spaced  name ", "spaced_name"),
    ],
)
def test_snake_case(name: str, snake: str) -> None:
    assert snake_case(name) == snake
    assert split_words(name) == snake.split("_")


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("Swagger Petstore", "swagger-petstore"),
        ("USPTO Data Set API", "uspto-data-set-api"),
        ("Onfido Public API v3.6", "onfido-public-api-v3-6"),
        ("Non-oAuth Scopes example", "non-o-auth-scopes-example"),
        ("Retail & Shopping", "retail-shopping"),
        ("weather_server", "weather-server"),
        ("E-Commerce", "e-commerce"),
        ("!!!", "topic"),
    ],
)
def test_slugify(text: str, slug: str) -> None:
    assert slugify(text) == slug


def test_slug_fallback_titles_and_row_ids() -> None:
    assert slugify("  ", fallback="") == ""
    assert title_from_slug("retail-and-shopping") == "Retail And Shopping"
    assert title_from_slug("pet_store") == "Pet Store"
    assert format_id("ord_", 7) == "ord_0007"
