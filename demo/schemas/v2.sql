-- storefront v2: customers gain a phone number; orders reference customers.
CREATE TABLE customers (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email      text        NOT NULL UNIQUE,
    name       text        NOT NULL,
    phone      text,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE orders (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    customer_id bigint         NOT NULL REFERENCES customers (id),
    total       numeric(12, 2) NOT NULL,
    placed_at   timestamptz    NOT NULL DEFAULT now()
);
