"""The system of cases/orders.json is the fixture `order_desk` ("system": "fixture:order_desk"):
pytest builds it, with the database it needs, only when a run calls the agent (--live,
--replay-http); a plain replay builds nothing."""

import pytest
from shop_agent import database
from shop_agent.system import OrderDesk


@pytest.fixture(scope="session")
def shop_db(tmp_path_factory):
    """The shop's sqlite database, in a file of its own, once per test session."""
    connection = database.build(tmp_path_factory.mktemp("shop") / "shop.sqlite")
    yield connection
    connection.close()


@pytest.fixture(scope="session")
def order_desk(shop_db):
    return OrderDesk(shop_db)
