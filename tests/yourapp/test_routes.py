import pytest

from labserver.yourapp import routes


def test_a_route_is_a_method_and_a_path_with_its_query():
    route = routes.parse("get /items?limit=20")
    assert route == {"method": "GET", "path": "/items?limit=20", "label": "GET /items?limit=20"}


def test_a_json_body_is_read_from_its_file_and_sent_as_json(tmp_path):
    (tmp_path / "order.json").write_text('{"item": "tea"}')
    route = routes.parse("POST /orders @order.json", {"Authorization": "Bearer x"}, tmp_path)
    assert route["body"] == '{"item": "tea"}'
    assert route["headers"] == {"Authorization": "Bearer x", "Content-Type": "application/json"}
    assert routes.describe(route) == "POST /orders (15 B body)"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("/items", "METHOD /path"),
        ("FETCH /items", "one of GET, POST"),
        ("GET items", "starts with /"),
        ("POST /orders order.json", "named @file"),
        ("POST /orders @missing.json", "cannot read the body"),
        ("GET /a /b /c", "METHOD /path"),
    ],
)
def test_a_route_that_cannot_be_sent_names_what_to_change(text, says, tmp_path):
    with pytest.raises(ValueError, match=says):
        routes.parse(text, folder=tmp_path)


def test_headers_env_and_floors_are_parsed_and_checked():
    assert routes.headers(["X-Key: a:b"]) == {"X-Key": "a:b"}
    assert routes.env(["DB_URL=postgres://x"]) == {"DB_URL": "postgres://x"}
    assert routes.at_least(["get /items = 300"], ["GET /items"]) == {"GET /items": 300.0}
    for bad, call in [
        ("no colon", lambda: routes.headers(["no colon"])),
        ("NAME=value", lambda: routes.env(["1X=2"])),
        ("REQ_PER_S", lambda: routes.at_least(["GET /items"], ["GET /items"])),
        ("not one of the routes", lambda: routes.at_least(["GET /other=5"], ["GET /items"])),
    ]:
        with pytest.raises(ValueError, match=bad):
            call()
