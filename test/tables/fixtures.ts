/** A small fixed table whose every query answer is worked out by hand in the tests. */
export const PLACES_SCHEMA = {
  fields: [
    { name: 'name', label: 'Name', type: 'string', required: true },
    { name: 'category', label: 'Category', type: 'string' },
    { name: 'price', label: 'Price', type: 'number' },
    { name: 'qty', label: 'Quantity', type: 'integer' },
    { name: 'active', label: 'Active', type: 'boolean' },
    { name: 'day', label: 'Day', type: 'date' },
    { name: 'at', label: 'At', type: 'datetime' },
    { name: 'lat', label: 'Latitude', type: 'number' },
    { name: 'lon', label: 'Longitude', type: 'number' },
    { name: 'meta', label: 'Meta', type: 'json' },
  ],
};

export const PLACES = [
  {
    name: 'Alpha Cafe',
    category: 'food',
    price: 12.5,
    qty: 3,
    active: true,
    day: '2024-01-05',
    at: '2024-01-05T10:00:00Z',
    lat: 52.52,
    lon: 13.4,
    meta: { a: 1 },
  },
  { name: 'Beta Books', category: 'shop', price: 30, qty: 1, active: false, day: '2024-02-10', at: '2024-02-10T23:30:00Z', lat: 48.85, lon: 2.35 },
  { name: 'Gamma Grill', category: 'food', price: 8, qty: 10, active: true, day: '2024-02-29', at: '2024-02-29T00:00:00Z', lat: 40.71, lon: -74 },
  { name: 'delta deli', category: 'food', price: null, qty: 5, active: true, day: '2024-03-15', at: '2024-03-15T12:00:00Z', lat: -33.87, lon: 151.21 },
  { name: 'Epsilon Eats', category: 'shop', price: 99.99, qty: 0, active: false, day: '2023-12-31', at: '2023-12-31T23:59:59Z', lat: 35.68, lon: 139.69 },
  { name: 'Zeta Zoo', category: 'fun', price: 20, qty: 2, active: true, day: '2024-01-20', at: '2024-01-20T08:00:00Z', lat: -17.7, lon: 178 },
  { name: 'Eta Arena', category: 'fun', qty: 7, active: false, day: '2024-04-01', at: '2024-04-01T06:00:00+02:00', lat: 64.2, lon: -149.5 },
  { name: 'Theta Cafe', category: 'food', price: 12.5, qty: 4, active: true, day: '2024-01-05', lat: 51.5, lon: -0.12 },
];
