"""evalcore.redact.mask_location: a secret never survives, the rest of a location does.

Properties (hypothesis) build locations the way their owners' parsers read them: libpq
keyword strings quoted by libpq's rules (PostgreSQL docs, "34.1.1.1. Keyword/Value
Connection Strings": single quotes around a value with spaces, ``\\'`` and ``\\\\``
inside), URLs with the password raw or percent-encoded (RFC 3986 user info), S3 URLs with
DuckDB's ``s3_*`` query parameters, DuckDB ``CREATE SECRET`` text with SQL literals
(``''`` for a quote) and environment variable assignments. Each checks the exact output:
the secret replaced by ``***`` and every other character (host, port, database, user,
region) unchanged.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from evalcore.redact import MASK, MIN_ECHO_LENGTH, is_secret_name, mask_location

ASCII_SPACE = " \t\n\r\f\v"

names = st.from_regex(r"[a-z_][a-z0-9_]{0,11}", fullmatch=True)
hosts = st.from_regex(r"[a-z][a-z0-9-]{0,10}(\.[a-z][a-z0-9-]{0,8}){0,2}", fullmatch=True)
ports = st.integers(1, 65535)
# any printable text, spaces, quotes, backslashes and non-ASCII included
passwords = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")),
                    min_size=1, max_size=24)
no_space = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zs")),
                   min_size=1, max_size=24).filter(lambda s: not any(c in ASCII_SPACE for c in s))


def libpq_value(value: str) -> str:
    """A value as libpq's keyword/value syntax writes it (quoted also when it starts with a
    double quote, which libpq allows and which reads as quoting elsewhere)."""
    if value and value[0] != '"' and not any(c in ASCII_SPACE + "'\\" for c in value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def survives_only_as_mask(secret: str, rest: str) -> bool:
    """The cases the exact-output properties cover: a secret long enough to be searched
    for elsewhere must not also be part of the location's other fields."""
    return len(secret) < MIN_ECHO_LENGTH or secret not in rest


@settings(max_examples=400, deadline=None)
@given(db=names, host=hosts, port=ports, user=names, password=passwords)
def test_libpq_password_is_masked_and_the_rest_kept(db, host, port, user, password):
    head = f"ducklake:postgres:dbname={db} host={host} port={port} user={user}"
    assume(survives_only_as_mask(password, head))
    value = libpq_value(password)
    masked = f"'{MASK}'" if value.startswith("'") else MASK
    assert mask_location(f"{head} password={value}") == f"{head} password={masked}"
    # the password in the middle, and spaces around '=' (libpq allows both)
    out = mask_location(f"dbname={db} password = {value} host={host}")
    assert out == f"dbname={db} password = {masked} host={host}"


@settings(max_examples=400, deadline=None)
@given(db=names, host=hosts, port=ports, user=names, password=no_space,
       encode=st.booleans())
def test_url_password_is_masked_raw_or_percent_encoded(db, host, port, user, password, encode):
    written = quote(password, safe="") if encode else password
    rest = f"postgresql://{user}:@{host}:{port}/{db}?sslmode=require"
    assume(survives_only_as_mask(password, rest) and survives_only_as_mask(written, rest))
    url = f"postgresql://{user}:{written}@{host}:{port}/{db}?sslmode=require"
    assert mask_location(url) == f"postgresql://{user}:{MASK}@{host}:{port}/{db}?sslmode=require"


@settings(max_examples=300, deadline=None)
@given(bucket=hosts, key_id=no_space, secret=no_space, token=no_space)
def test_s3_query_keys_are_masked(bucket, key_id, secret, token):
    enc = [quote(v, safe="") for v in (key_id, secret, token)]
    url = (f"s3://{bucket}/evals/data?s3_region=us-east-1&s3_access_key_id={enc[0]}"
           f"&s3_secret_access_key={enc[1]}&s3_session_token={enc[2]}&s3_use_ssl=false")
    rest = f"s3://{bucket}/evals/data?s3_region=us-east-1&s3_use_ssl=false"
    assume(all(survives_only_as_mask(v, rest) for v in enc))
    assert mask_location(url) == (
        f"s3://{bucket}/evals/data?s3_region=us-east-1&s3_access_key_id={MASK}"
        f"&s3_secret_access_key={MASK}&s3_session_token={MASK}&s3_use_ssl=false")


sql_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"),
                                 exclude_characters="\\"), min_size=1, max_size=24)


@settings(max_examples=300, deadline=None)
@given(key_id=sql_text, secret=sql_text, region=names)
def test_create_secret_values_are_masked(key_id, secret, region):
    def lit(v: str) -> str:
        return "'" + v.replace("'", "''") + "'"
    rest = f"CREATE SECRET lake_s3 (TYPE s3, REGION '{region}', URL_STYLE 'path')"
    assume(survives_only_as_mask(key_id, rest) and survives_only_as_mask(secret, rest))
    text = (f"CREATE SECRET lake_s3 (TYPE s3, KEY_ID {lit(key_id)}, SECRET {lit(secret)}, "
            f"REGION '{region}', URL_STYLE 'path')")
    assert mask_location(text) == (
        f"CREATE SECRET lake_s3 (TYPE s3, KEY_ID '{MASK}', SECRET '{MASK}', "
        f"REGION '{region}', URL_STYLE 'path')")


# a value that starts with a quote reads as quoted (a shell would have quoted it)
bare = no_space.filter(lambda v: v[0] not in "'\"")


@settings(max_examples=200, deadline=None)
@given(key_id=bare, secret=bare, region=names)
def test_aws_variables_are_masked(key_id, secret, region):
    rest = f"AWS_REGION={region}"
    assume(survives_only_as_mask(key_id, rest) and survives_only_as_mask(secret, rest))
    text = (f"AWS_ACCESS_KEY_ID={key_id} AWS_SECRET_ACCESS_KEY={secret} AWS_REGION={region}")
    assert mask_location(text) == (
        f"AWS_ACCESS_KEY_ID={MASK} AWS_SECRET_ACCESS_KEY={MASK} AWS_REGION={region}")


@settings(max_examples=300, deadline=None)
@given(text=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80))
def test_text_without_labels_is_unchanged(text):
    """Text with no '=', quote, '://', ':' or 'bearer' has nothing to mask."""
    assume(not any(c in text for c in "='\":") and "bearer" not in text.lower())
    assert mask_location(text) == text


@settings(max_examples=300, deadline=None)
@given(db=names, host=hosts, port=ports, password=passwords)
def test_masking_a_masked_location_changes_nothing(db, host, port, password):
    once = mask_location(f"dbname={db} host={host} port={port} password={libpq_value(password)}")
    assert mask_location(once) == once


@settings(max_examples=400, deadline=None)
@given(db=names, host=hosts, port=ports, password=passwords)
@example(db="_", host="a", port=1, password="\xa0")   # a no-break space is not a separator
def test_error_quoting_the_location_masks_every_copy(db, host, port, password):
    """DuckDB quotes the conninfo in double quotes after our own message has named the
    location: each copy is masked, the quote and the words after it stay."""
    value = libpq_value(password)
    masked = f"'{MASK}'" if value.startswith("'") else MASK
    conninfo = f"dbname={db} host={host} port={port} password="
    template = (f"opening the store ducklake:postgres:{conninfo}{{}} failed: Unable to connect "
                f'to Postgres at "{conninfo}{{}}": connection to server at "{host}", port '
                f"{port} failed: Connection refused")
    assume(survives_only_as_mask(password, template))
    assert mask_location(template.format(value, value)) == template.format(masked, masked)


def test_duckdb_error_repeating_the_location_keeps_its_words():
    """The message DuckDB 1.4.4 gives for a refused PostgreSQL catalog (captured here with
    a closed port): every copy of the password masked, the words after it kept."""
    loc = "ducklake:postgres:dbname=evals host=127.0.0.1 port=9 user=u password=SECRETPW"
    message = (
        f"opening the store {loc} failed: could not read or write the store files (IO Error: "
        'Failed to attach DuckLake MetaData "__ducklake_metadata_lake" at path + '
        '"postgres:dbname=evals host=127.0.0.1 port=9 user=u password=SECRETPW"Unable to '
        'connect to Postgres at "dbname=evals host=127.0.0.1 port=9 user=u '
        'password=SECRETPW": connection to server at "127.0.0.1", port 9 failed: '
        "Connection refused)")
    out = mask_location(message)
    assert "SECRETPW" not in out
    assert out.count("password=***") == 3
    assert 'password=***"Unable to connect to Postgres at "dbname=evals' in out
    assert 'password=***": connection to server at "127.0.0.1", port 9 failed' in out


def test_context_masks_a_bare_echo_of_the_password():
    loc = "ducklake:postgres:dbname=evals host=db.lab user=me password='s3cr3t pw'"
    assert mask_location("login as me with s3cr3t pw refused", context=loc) == (
        "login as me with *** refused")
    assert mask_location("login refused", context=[loc, "token=abcdef"]) == "login refused"


@pytest.mark.parametrize("text, expected", [
    ("password='a b\\'c' host=h", "password='***' host=h"),
    ("user='unterminated password=pw12345 host=h", "user='unterminated password=*** host=h"),
    ("password='never closed host=h", "password='***"),
    ('{"password": "hunter22", "host": "db"}', '{"password": "***", "host": "db"}'),
    ("{'secret': 'abcd', 'region': 'eu'}", "{'secret': '***', 'region': 'eu'}"),
    ("PGPASSWORD=hunter22 psql -h db", "PGPASSWORD=*** psql -h db"),
    ("https://h.example/api?api_key=xyz&q=1", "https://h.example/api?api_key=***&q=1"),
    ("https://acct.blob.core.windows.net/c?sv=2022&sig=abc%2Bdef", "https://acct.blob.core."
     "windows.net/c?sv=2022&sig=***"),
    ("DefaultEndpointsProtocol=https;AccountName=a;AccountKey=abc==;EndpointSuffix=x",
     "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=***"),
    ("Authorization: Bearer hf_abcdefgh", "Authorization: Bearer ***"),
    ("postgresql://me@db.lab:5432/evals", "postgresql://me@db.lab:5432/evals"),
    ("ducklake:sqlite:/data/evals/catalog.sqlite", "ducklake:sqlite:/data/evals/catalog.sqlite"),
    ("max_tokens=512 tokenizer=gpt2 cluster_key=passage_id num_fewshot=5",
     "max_tokens=512 tokenizer=gpt2 cluster_key=passage_id num_fewshot=5"),
    ("store is busy (locked by another process)", "store is busy (locked by another process)"),
])
def test_examples(text, expected):
    assert mask_location(text) == expected


@pytest.mark.parametrize("name", ["password", "PASSWORD", "sslpassword", "PGPASSWORD",
                                  "passwd", "pwd", "secret", "client_secret",
                                  "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "KEY_ID",
                                  "s3_session_token", "token", "X-Amz-Signature",
                                  "X-Amz-Credential", "sig", "AccountKey", "api_key", "apiKey",
                                  "key", "private_key", "authorization"])
def test_secret_names(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["host", "hostaddr", "port", "dbname", "user", "sslmode",
                                  "passfile", "sslkey", "region", "max_tokens", "tokenizer",
                                  "cluster_key", "keyword", "design", "signal", "DATA_PATH"])
def test_names_that_are_not_secret(name):
    assert not is_secret_name(name)
