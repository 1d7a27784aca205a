-- The shop's data: the session fixture loads it into a fresh sqlite file, and the
-- `sql_returns_rows` stage into an in-memory database to run the recorded SQL again.
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT NOT NULL);
CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price_cents INTEGER NOT NULL);
CREATE TABLE orders (
  id INTEGER PRIMARY KEY,
  customer_id INTEGER NOT NULL REFERENCES customers(id),
  placed_on TEXT NOT NULL,
  status TEXT NOT NULL
);
CREATE TABLE order_lines (
  order_id INTEGER NOT NULL REFERENCES orders(id),
  product_id INTEGER NOT NULL REFERENCES products(id),
  quantity INTEGER NOT NULL
);
INSERT INTO customers VALUES (1, 'Ada Lovelace', 'London'), (2, 'Grace Hopper', 'New York'),
  (3, 'Alan Turing', 'Manchester');
INSERT INTO products VALUES (10, 'Kettle', 2999), (11, 'Teapot', 1850), (12, 'Mug', 650),
  (13, 'Tea tin', 1200), (14, 'Toaster', 4500);
INSERT INTO orders VALUES (1040, 1, '2026-10-02', 'delivered'), (1041, 1, '2026-11-15', 'shipped'),
  (1042, 2, '2026-11-20', 'delivered'), (1043, 3, '2026-11-28', 'refund refused'),
  (1044, 1, '2026-11-30', 'processing');
INSERT INTO order_lines VALUES (1040, 10, 1), (1040, 12, 2), (1041, 13, 3), (1042, 14, 1),
  (1042, 12, 4), (1043, 11, 1), (1044, 12, 1);
