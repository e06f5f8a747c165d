"""Kafka's JAAS syntax: the forms operators write, and clear errors that never echo a password."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkafka.security.jaas import (
    PLAIN_LOGIN_MODULE,
    SCRAM_LOGIN_MODULE,
    JaasConfigError,
    parse_jaas_config,
    parse_jaas_file,
    plain_users,
    single_login_module,
)


def test_plain_login_module_with_users() -> None:
    module = single_login_module(
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b" '
        'user_a="b" user_alice="alice secret";',
        PLAIN_LOGIN_MODULE,
    )
    assert module.flag == "required"
    assert module.options["username"] == "a" and module.options["password"] == "b"
    assert plain_users(module) == {"a": "b", "alice": "alice secret"}
    assert "alice secret" not in repr(module)


def test_tolerant_of_whitespace_quotes_comments_and_case() -> None:
    text = """
        org.apache.kafka.common.security.scram.ScramLoginModule   REQUIRED
            // the broker's own credentials
            username = 'admin'   /* single quotes are fine */
            password="a \\"quoted\\" pass;word"
            tokenauth=false
        ;
    """
    module = single_login_module(text, SCRAM_LOGIN_MODULE)
    assert module.flag == "required"
    assert module.options == {"username": "admin", "password": 'a "quoted" pass;word', "tokenauth": "false"}


def test_several_modules_and_files() -> None:
    two = parse_jaas_config("a.B required; c.D optional x=1;")
    assert [m.class_name for m in two] == ["a.B", "c.D"] and two[1].options == {"x": "1"}
    with pytest.raises(JaasConfigError, match="2 login modules, expected 1"):
        single_login_module("a.B required; c.D optional x=1;")
    sections = parse_jaas_file(
        "KafkaServer {\n  org.apache.kafka.common.security.plain.PlainLoginModule required\n"
        '  user_admin="s";\n};\nClient { a.B optional; };\n'
    )
    assert set(sections) == {"KafkaServer", "Client"}
    assert plain_users(sections["KafkaServer"][0]) == {"admin": "s"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("   // nothing\n", "empty"),
        ("a.B", "control flag"),
        ("a.B mandatory;", "control flag"),
        ('a.B required user_x="secret1"', "an option or ';'"),
        ('a.B required user_x "secret2";', "'=' after option 'user_x'"),
        ("a.B required user_x=;", "a value for option 'user_x'"),
        ('a.B required user_x="secret3;', "unterminated quoted value"),
        ("a.B required /* x", r"unterminated /\* comment"),
        ('a.B required k="v" k="w";', "given twice"),
        ('"a.B" required;', "login module class name"),
    ],
)
def test_clear_errors(text: str, message: str) -> None:
    with pytest.raises(JaasConfigError, match=message) as info:
        parse_jaas_config(text)
    assert "secret" not in str(info.value)


def test_error_position() -> None:
    with pytest.raises(JaasConfigError, match="line 2 column 3"):
        parse_jaas_config("a.B required\n  =x;")
    with pytest.raises(JaasConfigError, match="expected login module"):
        single_login_module("a.B required;", PLAIN_LOGIN_MODULE)


def test_listener_jaas_config_key() -> None:
    from zkafka.security.jaas import listener_jaas_config

    config = {
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": "a.B required;",
        "sasl.jaas.config": "c.D required;",
    }
    assert listener_jaas_config(config, "SASL_SSL", "SCRAM-SHA-512") == "a.B required;"
    assert listener_jaas_config(config, "SASL_PLAINTEXT", "PLAIN") == "c.D required;"
    assert listener_jaas_config({}, "X", "PLAIN") is None


@settings(max_examples=400, deadline=None)
@given(
    text=st.lists(
        st.sampled_from([*"ab.=;\"'\\/*{} \n_", "required", "user_x", "//", "/*", "*/", "é"]), max_size=40
    ).map("".join)
)
def test_only_jaas_errors_escape(text: str) -> None:
    for parse in (parse_jaas_config, parse_jaas_file):
        try:
            parse(text)
        except JaasConfigError:
            pass
