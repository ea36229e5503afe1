"""The clients lesson 06 can send with, priced and run: one list of names for all three."""

from typing import get_args

from labserver.clients.strategies import STRATEGIES
from labserver.theory.batch import LIBRARY, Client


def test_the_clients_the_model_prices_are_those_that_can_send():
    assert set(get_args(Client)) == set(LIBRARY) == set(STRATEGIES)
