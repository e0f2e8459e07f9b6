"""Realistic value vocabularies for seeded rows: what a field of an entity plausibly holds.

Everything here draws from a caller's seeded `random.Random`, so values stay deterministic. The
vocabularies are real-world (ISO 4217 currencies, stock tickers, car makes, drug names, lab tests) or
built from domain words (meeting titles, issue titles, room names); none uses Faker's lorem words.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

Row = dict[str, Any]

# ISO 4217 codes in common use.
CURRENCIES = [
    "USD",
    "EUR",
    "GBP",
    "JPY",
    "CHF",
    "CAD",
    "AUD",
    "NZD",
    "SEK",
    "NOK",
    "DKK",
    "SGD",
    "HKD",
    "INR",
    "MXN",
    "BRL",
    "ZAR",
    "PLN",
    "CNY",
    "KRW",
]
# The currencies most rows use, most often first.
COMMON_CURRENCIES = ["USD", "USD", "USD", "EUR", "EUR", "GBP", "CAD", "AUD", "JPY", "CHF"]

CITIES = [
    ("Seattle", "WA"),
    ("Portland", "OR"),
    ("San Francisco", "CA"),
    ("Los Angeles", "CA"),
    ("San Diego", "CA"),
    ("Denver", "CO"),
    ("Austin", "TX"),
    ("Dallas", "TX"),
    ("Houston", "TX"),
    ("Chicago", "IL"),
    ("Minneapolis", "MN"),
    ("Boston", "MA"),
    ("New York", "NY"),
    ("Philadelphia", "PA"),
    ("Pittsburgh", "PA"),
    ("Atlanta", "GA"),
    ("Miami", "FL"),
    ("Orlando", "FL"),
    ("Nashville", "TN"),
    ("Phoenix", "AZ"),
    ("Salt Lake City", "UT"),
    ("Raleigh", "NC"),
    ("Charlotte", "NC"),
    ("Columbus", "OH"),
    ("Detroit", "MI"),
    ("Baltimore", "MD"),
    ("Washington", "DC"),
    ("Kansas City", "MO"),
    ("New Orleans", "LA"),
    ("Sacramento", "CA"),
]
COUNTRIES = [
    "United States",
    "Canada",
    "United Kingdom",
    "Germany",
    "France",
    "Netherlands",
    "Spain",
    "Italy",
    "Sweden",
    "Ireland",
    "Australia",
    "Japan",
    "Singapore",
    "India",
    "Brazil",
    "Mexico",
]
DEPARTMENTS = [
    "Engineering",
    "Sales",
    "Marketing",
    "Finance",
    "Operations",
    "Customer Support",
    "Human Resources",
    "Legal",
    "Product",
    "Design",
    "IT",
    "Procurement",
]
TEAMS = ["Platform", "Payments", "Identity", "Data", "Mobile", "Web", "SRE", "Search", "Billing", "Infrastructure"]
CATEGORIES = ["Hardware", "Software", "Office Supplies", "Services", "Furniture", "Electronics", "Apparel", "Groceries"]
STATUSES = ["active", "inactive", "pending"]
TAGS = ["work", "personal", "ideas", "meetings", "recipes", "travel", "reading", "finance", "health", "todo", "urgent"]
WINGS = ["North Wing", "South Wing", "East Wing", "West Wing", "Main Building", "Annex", "HQ Tower"]
WINGS += ["Innovation Center"]
ROOM_NAMES = [
    "Harbor View",
    "Maple",
    "Cedar",
    "Summit",
    "Lakeside",
    "Aurora",
    "Redwood",
    "Skyline",
    "Willow",
    "Granite",
    "Juniper",
    "Horizon",
]
CODENAMES = ["Atlas", "Beacon", "Cedar", "Summit", "Orion", "Falcon", "Nimbus", "Aurora", "Zephyr", "Polaris", "Apollo"]
ADJECTIVES = [
    "Classic",
    "Smart",
    "Eco",
    "Ultra",
    "Compact",
    "Deluxe",
    "Rugged",
    "Lightweight",
    "Pro",
    "Vintage",
    "Fresh",
]
MATERIALS = ["Steel", "Cotton", "Bamboo", "Leather", "Ceramic", "Glass", "Wool", "Oak", "Carbon", "Linen"]
GOODS = ["Lamp", "Backpack", "Mug", "Chair", "Jacket", "Speaker", "Bottle", "Notebook", "Kettle", "Blanket", "Watch"]
TICKERS = ["AAPL", "MSFT", "GOOGL", "AMZN", "NVDA", "META", "TSLA", "JPM", "V", "JNJ", "WMT", "PG", "KO", "DIS", "NFLX"]
TICKERS += ["INTC", "CSCO", "PFE", "XOM", "BAC", "ADBE", "CRM", "ORCL", "VTI", "VOO", "SPY", "QQQ"]
CAR_MODELS = {
    "Toyota": ["Corolla", "Camry", "RAV4", "Highlander", "Prius", "Sienna"],
    "Honda": ["Civic", "Accord", "CR-V", "Pilot", "Odyssey"],
    "Ford": ["Focus", "Escape", "Explorer", "Mustang", "Transit"],
    "Chevrolet": ["Malibu", "Equinox", "Tahoe", "Spark"],
    "Nissan": ["Altima", "Rogue", "Sentra", "Versa"],
    "Hyundai": ["Elantra", "Tucson", "Santa Fe", "Kona"],
    "Kia": ["Rio", "Sportage", "Sorento", "Carnival"],
    "Volkswagen": ["Golf", "Jetta", "Tiguan", "Passat"],
    "BMW": ["3 Series", "5 Series", "X3", "X5"],
    "Mercedes-Benz": ["C-Class", "E-Class", "GLC", "Sprinter"],
    "Tesla": ["Model 3", "Model Y", "Model S"],
    "Subaru": ["Impreza", "Outback", "Forester"],
}
MERCHANTS = [
    "Delta Air Lines",
    "United Airlines",
    "Marriott",
    "Hilton",
    "Uber",
    "Lyft",
    "Starbucks",
    "Staples",
    "Office Depot",
    "Amazon",
    "Hertz",
    "Chipotle",
    "Panera Bread",
    "Best Buy",
    "Shell",
    "Whole Foods Market",
]
BREEDS = {
    "dog": ["Labrador Retriever", "Golden Retriever", "German Shepherd", "Beagle", "Poodle", "Bulldog", "Dachshund"],
    "cat": ["Domestic Shorthair", "Maine Coon", "Siamese", "Persian", "Ragdoll", "Bengal"],
    "rabbit": ["Holland Lop", "Netherland Dwarf", "Mini Rex", "Lionhead"],
    "bird": ["Budgerigar", "Cockatiel", "African Grey", "Canary", "Lovebird"],
    "reptile": ["Bearded Dragon", "Leopard Gecko", "Ball Python", "Corn Snake"],
}
PET_NAMES = ["Bella", "Max", "Luna", "Charlie", "Lucy", "Cooper", "Daisy", "Milo", "Bailey", "Rocky", "Nala", "Oliver"]
PET_NAMES += ["Coco", "Teddy", "Willow", "Biscuit", "Pepper", "Ziggy", "Mochi", "Simba"]
MEDICATIONS = ["Amoxicillin", "Ibuprofen", "Lisinopril", "Metformin", "Atorvastatin", "Omeprazole", "Amlodipine"]
MEDICATIONS += ["Levothyroxine", "Sertraline", "Cetirizine", "Prednisone", "Azithromycin", "Losartan", "Gabapentin"]
DOSES = ["5 mg", "10 mg", "20 mg", "25 mg", "50 mg", "100 mg", "200 mg", "250 mg", "500 mg"]
ALLERGIES = ["None known", "Penicillin", "Peanuts", "Latex", "Sulfa drugs", "Shellfish", "Aspirin", "Pollen"]
LAB_TESTS = [
    "Complete Blood Count",
    "Basic Metabolic Panel",
    "Comprehensive Metabolic Panel",
    "Lipid Panel",
    "Hemoglobin A1c",
    "Thyroid Stimulating Hormone",
    "Vitamin D, 25-Hydroxy",
    "Urinalysis",
    "Liver Function Panel",
    "C-Reactive Protein",
    "Prothrombin Time",
    "Ferritin",
]
LAB_UNITS = ["mg/dL", "mmol/L", "g/dL", "%", "U/L", "mIU/L", "ng/mL", "x10^9/L", "mEq/L"]
DISHES = [
    "Margherita Pizza",
    "Chicken Tikka Masala",
    "Pad Thai",
    "Beef Burrito",
    "Caesar Salad",
    "Salmon Teriyaki",
    "Veggie Burger",
    "Spaghetti Carbonara",
    "Pork Ramen",
    "Falafel Wrap",
    "Chicken Quesadilla",
    "Mushroom Risotto",
    "Kung Pao Chicken",
    "Palak Paneer",
    "Fish Tacos",
    "Avocado Toast",
]
RAW_MATERIALS = ["Aluminum Sheet", "Steel Rod", "Copper Wire", "ABS Pellets", "Plywood Panel", "Cotton Fabric"]
RAW_MATERIALS += ["Epoxy Resin", "Nylon Thread", "Glass Fiber", "Rubber Gasket", "PVC Pipe", "Brass Fitting"]
GRAPH_NODE_TYPES = ["person", "organization", "project", "place", "event"]
GRAPH_RELATION_TYPES = ["works_at", "knows", "manages", "leads", "located_in"]
SIZES = ["2 mm", "5 mm", "10 mm", "1 m", "25 kg", "50 m", "Grade A", "Type B"]
REWARDS = ["$10 Gift Card", "$25 Gift Card", "Free Coffee", "Movie Tickets (2)", "Free Shipping", "Priority Boarding"]
REWARDS += ["Spa Voucher", "Free Dessert", "Lounge Pass", "Room Upgrade", "Branded Tote Bag", "Wireless Earbuds"]
PLAN_TIERS = ["Starter", "Basic", "Standard", "Plus", "Pro", "Business", "Team", "Enterprise", "Premium"]
PLAN_CADENCE = ["Monthly", "Annual", "Quarterly"]
SERVICE_SLUGS = ["checkout", "auth", "payments", "search", "notifications", "inventory", "billing", "gateway", "users"]
SERVICE_KINDS = ["api", "service", "worker", "db", "frontend", "scheduler"]
SALON_SERVICES = {
    "hair": ["Women's Haircut", "Men's Haircut", "Blowout", "Color & Highlights", "Keratin Treatment"],
    "nails": ["Gel Manicure", "Classic Pedicure", "Acrylic Full Set", "Nail Art Add-on"],
    "massage": ["Swedish Massage", "Deep Tissue Massage", "Hot Stone Massage", "Sports Massage"],
    "skin": ["Signature Facial", "Chemical Peel", "Microdermabrasion", "Hydrating Facial"],
    "consultation": ["New Client Consultation", "Style Consultation", "Skin Analysis"],
}
SHOW_TITLES = {
    "concert": ["The Midnight Tour", "Symphony Under the Stars", "Jazz at the Harbor", "Indie Nights Live"],
    "theatre": ["Hamlet", "The Glass Menagerie", "A Midsummer Night's Dream", "Death of a Salesman", "Our Town"],
    "comedy": ["Stand-Up Showcase", "Improv Night", "Late Laughs Live", "Comedy Cellar Sessions"],
    "sports": ["Hawks vs. Lions", "City Derby", "Championship Finals", "Season Opener", "Playoff Game 3"],
    "conference": ["DevSummit 2026", "Future of Retail Forum", "Cloud Native Day", "Product Leaders Meetup"],
}
TOUR_TITLES = {
    "walking": ["Old Town Walking Tour", "Historic District Stroll", "Street Art Walk", "Ghost Stories After Dark"],
    "food": ["Street Food Crawl", "Wine and Cheese Tasting", "Farmers Market Tour", "Craft Brewery Tour"],
    "museum": ["Modern Art Highlights", "Natural History Guided Visit", "Museum After Hours"],
    "outdoor": ["Sunrise Hike", "Canyon Kayak Adventure", "Bike Tour of the Parks", "Waterfall Trail Trek"],
    "boat": ["Sunset Harbor Cruise", "Island Hopping Trip", "Whale Watching Cruise", "River Dinner Cruise"],
}
ASSET_MODELS = {
    "laptop": ['MacBook Pro 14"', "Dell Latitude 7440", "Lenovo ThinkPad X1 Carbon", "HP EliteBook 840"],
    "monitor": ['Dell UltraSharp 27"', 'LG 32" 4K Monitor', 'Samsung 24" Monitor', "BenQ PD2705U"],
    "phone": ["iPhone 15", "iPhone 14", "Pixel 8", "Galaxy S23"],
    "furniture": ["Standing Desk", "Ergonomic Office Chair", "Filing Cabinet", "Conference Table"],
    "vehicle": ["Ford Transit Van", "Toyota Prius", "Honda CR-V", "Forklift"],
}
COURSE_SUBJECTS = ["Data Science", "Financial Accounting", "Organic Chemistry", "Creative Writing", "Statistics"]
COURSE_SUBJECTS += ["World History", "Machine Learning", "Microeconomics", "Web Development", "Public Speaking"]
COURSE_LEVELS = ["Introduction to", "Foundations of", "Advanced", "Applied", "Topics in"]
CLASS_SUBJECTS = ["Algebra I", "Geometry", "Biology", "Chemistry", "English Literature", "US History", "Spanish II"]
CLASS_SUBJECTS += ["Physics", "Art Studio", "Computer Science", "Pre-Calculus"]
ASSIGNMENTS = ["Problem Set", "Lab Report", "Reading Quiz", "Essay", "Midterm Project", "Case Study", "Homework"]
BOOK_ADJ = ["Silent", "Hidden", "Forgotten", "Golden", "Broken", "Distant", "Secret", "Winter", "Crimson", "Lost"]
BOOK_NOUNS = ["Harbor", "Meadow", "Kingdom", "River", "Lighthouse", "Orchard", "Voyage", "Archive", "Island", "Code"]
MEETINGS = ["Weekly Sync", "Sprint Planning", "Design Review", "Quarterly Business Review", "Standup", "Retro"]
MEETINGS += ["Budget Review", "Customer Call", "Interview Panel", "Onboarding Session", "Roadmap Workshop", "All-Hands"]
ROOM_TYPES = ["Standard Queen", "Standard King", "Deluxe King", "Double Queen", "Junior Suite", "Executive Suite"]
ROOM_TYPES += ["Ocean View Suite", "Family Room", "Studio", "Penthouse Suite"]
FOLDERS = ["Invoices", "Projects", "Archive", "Marketing Assets", "Contracts", "Receipts", "Photos", "Reports"]
FOLDERS += ["Taxes 2025", "Design Files", "Onboarding", "Presentations", "Travel"]
DOC_NAMES = ["Q3 Budget Review", "Project Proposal", "Meeting Notes", "Sales Forecast", "Onboarding Checklist"]
DOC_NAMES += ["Brand Guidelines", "Team Roster", "Product Roadmap", "Invoice 1042", "Vendor Contract", "Trip Itinerary"]
FILE_TYPES = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "png": "image/png",
    "jpg": "image/jpeg",
    "csv": "text/csv",
    "txt": "text/plain",
    "zip": "application/zip",
}
EMAIL_FOLDERS = ["Inbox", "Sent", "Drafts", "Archive", "Spam", "Receipts", "Newsletters", "Travel", "Projects"]
NOTEBOOKS = ["Work Notes", "Recipes", "Travel Plans", "Book Notes", "Journal", "Side Projects", "Meeting Notes"]
BOARDS = ["General Discussion", "Announcements", "Help & Support", "Feature Requests", "Show and Tell"]
BOARDS += ["Bug Reports", "Introductions", "Off-Topic", "Tips & Tricks"]
SPACES = ["Engineering", "Product", "HR Handbook", "Sales Playbook", "Design System", "IT Help", "Onboarding"]
CALENDARS = ["Team Calendar", "Marketing Events", "On-call Rotation", "Company Holidays", "Product Launches"]
CALENDARS += ["Interviews", "Customer Meetings", "Training"]
MAILINGS = ["Monthly Newsletter", "Product Updates", "Weekly Digest", "Customer Announcements", "Event Invitations"]
MAILINGS += ["Partner Updates", "Beta Testers"]
CHANNELS = ["general", "random", "announcements", "eng-platform", "design-reviews", "sales-wins", "support-escalations"]
CHANNELS += ["incidents", "releases", "hiring", "marketing", "data-team"]
CHANNEL_TOPICS = ["Team announcements", "Release coordination", "Questions welcome", "Weekly wins", "Daily standup"]
PORTFOLIOS = ["Retirement Fund", "Growth Portfolio", "College Savings", "Dividend Income", "Tech Focus"]
PORTFOLIOS += ["Emergency Reserve", "Balanced Index", "ESG Portfolio"]
REPOS = ["payments-service", "web-frontend", "mobile-app", "auth-service", "data-pipeline", "design-system"]
REPOS += ["infra-terraform", "search-indexer", "billing-api", "docs-site", "analytics-dashboard"]
PIPELINES = ["build-and-test", "deploy-production", "deploy-staging", "nightly-e2e", "lint", "release"]
PIPELINES += ["security-scan", "docker-publish", "integration-tests"]
PROJECTS = ["Mobile App Redesign", "Checkout Revamp", "Data Warehouse Migration", "Customer Portal"]
PROJECTS += ["Onboarding Flow", "Billing Platform", "Search Relevance", "Internal Tools", "Website Refresh"]
DEFAULT_BRANCHES = ["main", "main", "main", "develop", "master"]
BRANCH_KINDS = ["feature", "fix", "chore", "refactor"]
BRANCH_TOPICS = ["login-timeout", "cart-totals", "dark-mode", "retry-logic", "api-pagination", "ci-cache"]
BRANCH_TOPICS += ["user-settings", "invoice-export", "search-filters", "deps-upgrade"]
COMPONENTS = ["login page", "checkout flow", "search results", "settings screen", "invoice export", "dashboard"]
COMPONENTS += ["notification emails", "file upload", "API pagination", "password reset", "mobile navigation"]
DEV_VERBS = ["Fix", "Add", "Improve", "Refactor", "Update", "Remove", "Document"]
PROBLEMS = ["crash", "timeout", "wrong totals", "slow loading", "broken layout", "missing translations"]
SUPPORT_SUBJECTS = [
    "Unable to log in",
    "Refund request for order #{n}",
    "Billing discrepancy on last invoice",
    "Password reset email not received",
    "Package arrived damaged",
    "How do I change my plan?",
    "Charged twice for order #{n}",
    "App crashes on startup",
    "Cannot update payment method",
    "Question about shipping times",
]
INCIDENTS = ["Elevated 5xx errors on {svc}", "Latency spike on {svc}", "{svc} unavailable in eu-west"]
INCIDENTS += ["Disk full on {svc}"]
INCIDENTS += ["Failed deploy of {svc}", "Certificate expiry on {svc}", "Queue backlog in {svc}"]
DOC_TITLES = ["Employment Agreement", "Non-Disclosure Agreement", "Lease Renewal", "Consulting Agreement"]
DOC_TITLES += ["Purchase Order Approval", "Offer Letter", "Vendor Contract", "Statement of Work"]
WIKI_PAGES = ["Onboarding Guide", "Release Process", "Architecture Overview", "On-call Runbook", "Coding Standards"]
WIKI_PAGES += ["Expense Policy", "Holiday Schedule", "Incident Postmortem Template", "API Style Guide", "FAQ"]
NOTE_TITLES = ["Grocery list", "Ideas for Q3", "Book recommendations", "Packing list", "Call notes", "Weekend plans"]
NOTE_TITLES += ["Gift ideas", "Reading list", "1:1 agenda", "Workout plan"]
FORUM_THREADS = ["How do I reset my password?", "Feature request: dark mode", "Best practices for backups?"]
FORUM_THREADS += ["Sync fails after update", "Introduce yourself!", "Export to CSV not working", "Tips for beginners"]
EMAIL_SUBJECTS = ["Re: Q3 planning", "Invoice #{n}", "Lunch on Friday?", "Your order has shipped", "Meeting notes"]
EMAIL_SUBJECTS += ["Welcome aboard!", "Updated proposal", "Reminder: timesheets due", "Fwd: travel itinerary"]
CAMPAIGN_SUBJECTS = ["Spring Sale: 20% off everything", "Your monthly newsletter", "New arrivals are here"]
CAMPAIGN_SUBJECTS += ["Last chance: free shipping ends tonight", "We miss you - here's 15% off", "Product update"]
EXPENSE_TITLES = ["Client visit - {city}", "Conference trip - {city}", "Team offsite", "Office supplies", "Sales trip"]
EXPENSE_TITLES += ["Training course", "Customer dinner - {city}", "Trade show - {city}"]
DEAL_KINDS = ["renewal", "expansion", "new license", "pilot", "upsell", "multi-year contract"]
JOB_LOCATIONS = ["Remote", "Hybrid - {city}, {state}", "{city}, {state}"]
COHORTS = ["Spring {y}", "Fall {y}", "Summer {y}", "Cohort A", "Cohort B", "Cohort C"]

PHRASES: dict[str, list[str]] = {
    "support": [
        "Customer cannot complete checkout; the payment page times out after entering card details.",
        "Requested a refund for a duplicate charge on the last invoice.",
        "Followed up by email and asked the customer to clear the browser cache and retry.",
        "Escalated to tier 2 after reproducing the issue on the mobile app.",
        "Confirmed the fix with the customer; closing the ticket.",
        "Shared the steps to update the billing address from account settings.",
        "Replacement shipped with expedited delivery at no extra cost.",
    ],
    "dev": [
        "Steps to reproduce: open the {component} and submit the form twice; the second request fails.",
        "Looks good overall; please add a test for the empty-list case.",
        "Could we move this check into the service layer? It duplicates the validation in the API handler.",
        "Bumped the dependency and regenerated the lockfile; CI is green.",
        "The {component} shows {problem} when the user has more than 50 items.",
        "Added retries with exponential backoff and a metric for failed attempts.",
        "Nit: rename the variable to make the intent clearer.",
    ],
    "incident": [
        "Error rates rose after a config change to {svc}; rolled back and monitoring.",
        "Database connections saturated during peak traffic; scaled the pool and added an alert.",
        "A certificate expired on the load balancer; renewed and added expiry monitoring.",
        "Deploy introduced a memory leak in {svc}; reverted to the previous release.",
    ],
    "health": [
        "Annual physical exam",
        "Follow-up on blood pressure medication",
        "Persistent cough for two weeks",
        "Lower back pain after lifting",
        "Routine vaccination",
        "Review of recent lab results",
        "Skin rash on forearm",
        "Patient reports improved sleep; continue current dosage.",
    ],
    "vet": [
        "Annual vaccination and wellness check",
        "Limping on the front left leg",
        "Dental cleaning",
        "Skin irritation and scratching",
        "Post-surgery follow-up",
        "Not eating for two days",
    ],
    "finance": [
        "Card purchase at {merchant}",
        "Salary deposit",
        "Transfer to savings",
        "ATM withdrawal",
        "Monthly account fee",
        "Utility bill payment",
        "Refund from {merchant}",
    ],
    "hr": [
        "Family vacation",
        "Medical appointment",
        "Moving to a new apartment",
        "Attending a wedding out of town",
        "Caring for a family member",
        "Personal errands",
    ],
    "education": [
        "Strong work on the lab report; keep it up.",
        "Needs to review chapter 4 before the final exam.",
        "Great participation in class discussions.",
        "Submitted late; please plan ahead for the next assignment.",
        "Clear, well-organized essay with good use of sources.",
    ],
    "chat": [
        "Can we push the standup to 10:30?",
        "Deploy is done, please verify on staging.",
        "Thanks for the quick review!",
        "Reminder: the design review moved to Thursday.",
        "Who owns the billing dashboard these days?",
        "Lunch order closes at noon.",
        "Shared the slides in the team folder.",
    ],
    "email": [
        "Hi, attached is the updated proposal. Let me know if you have any questions.",
        "Thanks for your order! Your package will arrive in 3-5 business days.",
        "Please find the invoice for last month attached; payment is due in 30 days.",
        "Following up on our call yesterday; here are the next steps we agreed on.",
        "Reminder that timesheets are due by Friday at 5 pm.",
    ],
    "sms": [
        "Your appointment is confirmed for tomorrow at 10:00. Reply STOP to opt out.",
        "Your order has shipped and will arrive Thursday.",
        "Your verification code is {code}.",
        "Reminder: your payment of ${amount} is due on the 15th.",
        "Flash sale today only: 20% off in store and online.",
    ],
    "product": [
        "Lightweight and durable, designed for everyday use.",
        "Made from sustainably sourced materials; machine washable.",
        "Barely used, in excellent condition with original packaging.",
        "Includes a one-year warranty and free returns.",
        "Compact design that fits easily in a backpack.",
    ],
    "general": [
        "Weekly sync to review progress, blockers and next steps.",
        "Shared space for the team's plans, decisions and how-to guides.",
        "Updates on new features, fixes and upcoming releases.",
        "Everything you need to get started, in one place.",
        "Reviewed and approved by the team lead.",
        "Please bring the latest numbers to the meeting.",
    ],
}
_PHRASE_DOMAINS = [
    ({"ticket", "reply", "case", "conversation"}, "support"),
    ({"issue", "comment", "pull_request", "review", "commit", "run", "pipeline", "repository", "page"}, "dev"),
    ({"incident", "alert", "postmortem"}, "incident"),
    ({"visit", "appointment", "patient", "prescription", "lab_order", "result"}, "health"),
    ({"vet_visit", "pet"}, "vet"),
    ({"transaction", "payment", "expense", "invoice", "account"}, "finance"),
    ({"leave_request", "time_off", "absence"}, "hr"),
    ({"grade", "submission", "assignment"}, "education"),
    ({"message", "post", "thread"}, "chat"),
    ({"email", "mail"}, "email"),
    ({"text_message", "sms", "notification"}, "sms"),
    ({"listing", "product", "item", "stock_item", "menu_item"}, "product"),
]


def pick(rng: random.Random, items: list[Any]) -> Any:
    return items[rng.randrange(len(items))]


def city(rng: random.Random) -> str:
    return pick(rng, CITIES)[0]


def person_name(rng: random.Random, fake: Any) -> str:
    """First and last name, without the prefixes and suffixes (Mr., PhD) Faker sometimes adds."""
    return f"{fake.first_name()} {fake.last_name()}"


def product_name(rng: random.Random) -> str:
    return f"{pick(rng, ADJECTIVES)} {pick(rng, MATERIALS)} {pick(rng, GOODS)}"


def currency(rng: random.Random) -> str:
    return pick(rng, COMMON_CURRENCIES) if rng.random() < 0.85 else pick(rng, CURRENCIES)


def service_slug(rng: random.Random) -> str:
    return f"{pick(rng, SERVICE_SLUGS)}-{pick(rng, SERVICE_KINDS)}"


def issue_title(rng: random.Random) -> str:
    verb = pick(rng, DEV_VERBS)
    if verb == "Fix":
        return f"Fix {pick(rng, PROBLEMS)} in {pick(rng, COMPONENTS)}"
    return f"{verb} {pick(rng, COMPONENTS)}"


def _fmt(rng: random.Random, template: str) -> str:
    place = pick(rng, CITIES)
    return template.format(
        n=rng.randint(1000, 9999),
        city=place[0],
        state=place[1],
        svc=service_slug(rng),
        component=pick(rng, COMPONENTS),
        problem=pick(rng, PROBLEMS),
        merchant=pick(rng, MERCHANTS),
        code=rng.randint(100000, 999999),
        amount=f"{rng.randint(10, 300)}.{rng.randint(0, 99):02d}",
        y=rng.choice([2025, 2026]),
    )


def phrase(rng: random.Random, entity: str, field: str) -> str:
    """A plausible sentence for a free-text field of `entity` (description, body, notes...)."""
    domain = next((d for names, d in _PHRASE_DOMAINS if entity in names), "general")
    if field in ("reason",) and domain not in ("health", "vet", "hr"):
        domain = "general"
    return _fmt(rng, pick(rng, PHRASES[domain]))


def _choose(options: list[str]) -> Callable[[random.Random, Row, Any], str]:
    return lambda rng, row, fake: _fmt(rng, pick(rng, options))


def _pair(first: list[str], second: list[str]) -> Callable[[random.Random, Row, Any], str]:
    """One of each list, space-joined: "Amoxicillin 250 mg", "Pro Annual"."""
    return lambda rng, row, fake: f"{pick(rng, first)} {pick(rng, second)}"


def _by_enum(field: str, table: dict[str, list[str]]) -> Callable[[random.Random, Row, Any], str]:
    every = [v for vs in table.values() for v in vs]
    return lambda rng, row, fake: pick(rng, table.get(str(row.get(field)), every))


def _service(rng: random.Random, row: Row, fake: Any) -> str:
    if str(row.get("category")) in SALON_SERVICES or "price" in row or "duration_minutes" in row:
        return _by_enum("category", SALON_SERVICES)(rng, row, fake)
    return service_slug(rng)


def _room(rng: random.Random, row: Row, fake: Any) -> str:
    if rng.random() < 0.5:
        return f"{pick(rng, ROOM_NAMES)} Room"
    return f"Conference Room {rng.randint(1, 6)}{pick(rng, list('ABCD'))}"


def _hotel(rng: random.Random, row: Row, fake: Any) -> str:
    brand = pick(rng, ["Grand", "Harbor", "Plaza", "Park", "Riverside", "Central", "Bayview"])
    return f"{row.get('city') or city(rng)} {brand} Hotel"


def _place(kind: str) -> Callable[[random.Random, Row, Any], str]:
    def make(rng: random.Random, row: Row, fake: Any) -> str:
        where = row.get("city") if isinstance(row.get("city"), str) else city(rng)
        quarter = pick(rng, ["Downtown", "Airport", "Midtown", "Uptown", "Riverside", "Eastside", "Westside"])
        return f"{where} {quarter} {kind}"

    return make


def _school_class(rng: random.Random, row: Row, fake: Any) -> str:
    return f"{pick(rng, CLASS_SUBJECTS)} - Period {rng.randint(1, 7)}"


def _assignment(rng: random.Random, row: Row, fake: Any) -> str:
    return f"{pick(rng, ASSIGNMENTS)} {rng.randint(1, 8)}"


def _book(rng: random.Random, row: Row, fake: Any) -> str:
    if rng.random() < 0.5:
        return f"The {pick(rng, BOOK_ADJ)} {pick(rng, BOOK_NOUNS)}"
    return f"{pick(rng, BOOK_NOUNS)} of {pick(rng, ['Ash', 'Stars', 'Glass', 'Tides', 'Iron', 'Memory', 'Salt'])}"


def _deal(rng: random.Random, row: Row, fake: Any) -> str:
    return f"{fake.company()} - {pick(rng, DEAL_KINDS)}"


def _file(rng: random.Random, row: Row, fake: Any) -> str:
    return f"{pick(rng, DOC_NAMES)}.{pick(rng, list(FILE_TYPES))}"


def _lab_test(rng: random.Random, row: Row, fake: Any) -> str:
    return pick(rng, LAB_TESTS)


def _asset(rng: random.Random, row: Row, fake: Any) -> str:
    return _by_enum("category", ASSET_MODELS)(rng, row, fake)


def _envelope(rng: random.Random, row: Row, fake: Any) -> str:
    return f"{pick(rng, DOC_TITLES)} - {fake.last_name()}"


def _incident(rng: random.Random, row: Row, fake: Any) -> str:
    return _fmt(rng, pick(rng, INCIDENTS))


def _issue(rng: random.Random, row: Row, fake: Any) -> str:
    return issue_title(rng)


def _meeting(rng: random.Random, row: Row, fake: Any) -> str:
    return pick(rng, MEETINGS)


def _job(rng: random.Random, row: Row, fake: Any) -> str:
    return str(fake.job())


# Name or title of a row by entity: the main label a user would recognize it by.
ENTITY_LABELS: dict[str, Callable[[random.Random, Row, Any], str]] = {
    "medication": _pair(MEDICATIONS, DOSES),
    "drug": _pair(MEDICATIONS, DOSES),
    "menu_item": _choose(DISHES),
    "dish": _choose(DISHES),
    "material": _pair(RAW_MATERIALS, SIZES),
    "reward": _choose(REWARDS),
    "plan": _pair(PLAN_TIERS, PLAN_CADENCE),
    "service": _service,
    "room": _room,
    "meeting_room": _room,
    "room_type": _choose(ROOM_TYPES),
    "hotel": _hotel,
    "branch": _place("Branch"),
    "warehouse": _place("Warehouse"),
    "store": _place("Store"),
    "office": _place("Office"),
    "clinic": _place("Clinic"),
    "site": _place("Site"),
    "location": _place("Location"),
    "venue": _place("Arena"),
    "restaurant": lambda rng, row, fake: f"{fake.last_name()}'s {pick(rng, ['Kitchen', 'Bistro', 'Grill', 'Diner'])}",
    "course": _pair(COURSE_LEVELS, COURSE_SUBJECTS),
    "school_class": _school_class,
    "class": _school_class,
    "assignment": _assignment,
    "book": _book,
    "deal": _deal,
    "file": _file,
    "document": _file,
    "folder": _choose(FOLDERS),
    "lab_test": _lab_test,
    "asset": _asset,
    "envelope": _envelope,
    "incident": _incident,
    "issue": _issue,
    "pull_request": _issue,
    "task": _issue,
    "event": _meeting,
    "booking": _meeting,
    "meeting": _meeting,
    "job": _job,
    "show": _by_enum("genre", SHOW_TITLES),
    "tour": _by_enum("category", TOUR_TITLES),
    "ticket": _choose(SUPPORT_SUBJECTS),
    "notebook": _choose(NOTEBOOKS),
    "note": _choose(NOTE_TITLES),
    "board": _choose(BOARDS),
    "space": _choose(SPACES),
    "page": _choose(WIKI_PAGES),
    "calendar": _choose(CALENDARS),
    "mailing": _choose(MAILINGS),
    "mailing_list": _choose(MAILINGS),
    "channel": _choose(CHANNELS),
    "portfolio": _choose(PORTFOLIOS),
    "repository": _choose(REPOS),
    "repo": _choose(REPOS),
    "pipeline": _choose(PIPELINES),
    "project": _choose(PROJECTS),
    "thread": _choose(FORUM_THREADS),
    "email": _choose(EMAIL_SUBJECTS),
    "campaign": _choose(CAMPAIGN_SUBJECTS),
    "expense_report": _choose(EXPENSE_TITLES),
    "pet": _choose(PET_NAMES),
}


def entity_label(entity: str, rng: random.Random, row: Row, fake: Any) -> str | None:
    """The name or title of a row of `entity` from its domain vocabulary, or None when there is none."""
    make = ENTITY_LABELS.get(entity)
    return make(rng, row, fake) if make else None


def generic_label(entity: str, rng: random.Random) -> str:
    """A readable label for a row of an entity without its own vocabulary ("Orion Portfolio")."""
    return f"{pick(rng, CODENAMES)} {entity.replace('_', ' ').title()}"


def month_in(rng: random.Random, years: tuple[int, int], last_month: int = 12, first_month: int = 1) -> tuple[int, int]:
    """A (year, month) between `first_month` of years[0] and `last_month` of years[1]."""
    year = rng.randint(*years)
    lo = first_month if year == years[0] else 1
    return year, rng.randint(lo, max(lo, last_month if year == years[1] else 12))


def budget_period(rng: random.Random, years: tuple[int, int], last_month: int = 12, first_month: int = 1) -> str:
    """A budget period: a quarter ("2026-Q1"), a fiscal year ("FY2026") or a month ("2026-03")."""
    year, month = month_in(rng, years, last_month, first_month)
    kind = rng.random()
    if kind < 0.5:
        return f"{year}-Q{(month - 1) // 3 + 1}"
    if kind < 0.7:
        return f"FY{year}"
    return f"{year}-{month:02d}"


def _commit_sha(rng: random.Random) -> str:
    return f"{rng.getrandbits(160):040x}"


def _branch(n: str, rng: random.Random) -> str:
    if n == "default_branch" or (n == "branch" and rng.random() < 0.6):
        return pick(rng, DEFAULT_BRANCHES)
    return f"{pick(rng, BRANCH_KINDS)}/{pick(rng, BRANCH_TOPICS)}"


def _bin(rng: random.Random) -> str:
    return f"{pick(rng, list('ABCDEF'))}-{rng.randint(1, 24):02d}-{rng.randint(1, 5)}"


def _prefix(row: Row, rng: random.Random) -> str:
    name = row.get("name") or row.get("title")
    words = [w for w in str(name or "").replace("-", " ").split() if w[:1].isalpha()]
    words = [w for w in words if w.lower() not in ("of", "the", "and", "to", "for")] or words
    if words:
        initials = "".join(w[0] for w in words[:4])
        return (words[0][: max(1, 4 - len(initials))] + initials[1:]).upper()
    return "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(3))


def _domain(row: Row, rng: random.Random) -> str:
    name = str(row.get("name") or row.get("company") or pick(rng, CODENAMES))
    word = "".join(ch for ch in name.split(",")[0].split(" ")[0].split("-")[0].lower() if ch.isalnum())
    return f"{word or 'example'}.{pick(rng, ['com', 'com', 'io', 'co', 'net'])}"


def _mime(row: Row, rng: random.Random) -> str:
    name = str(row.get("name") or row.get("file_name") or row.get("filename") or "")
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    return FILE_TYPES.get(ext) or pick(rng, list(FILE_TYPES.values()))


def _breed(row: Row, rng: random.Random) -> str:
    options = BREEDS.get(str(row.get("species")))
    return pick(rng, options or [b for bs in BREEDS.values() for b in bs])


def _model(row: Row, rng: random.Random) -> str:
    models = CAR_MODELS.get(str(row.get("make")))
    return pick(rng, models or [m for ms in CAR_MODELS.values() for m in ms])


def _location(entity: str, rng: random.Random) -> str:
    place = pick(rng, CITIES)
    if entity in ("job", "position", "opening", "candidate"):
        return _fmt(rng, pick(rng, JOB_LOCATIONS))
    if entity in ("shift",):
        return f"{place[0]} {pick(rng, ['Store', 'Kitchen', 'Warehouse', 'Front Desk'])} #{rng.randint(1, 40)}"
    if rng.random() < 0.5:
        return f"{pick(rng, ROOM_NAMES)} Room, {pick(rng, WINGS)}"
    return pick(rng, ["Zoom", "Google Meet", "Microsoft Teams", f"{place[0]} Office"])


def field_value(
    n: str,
    entity: str,
    row: Row,
    rng: random.Random,
    fake: Any,
    years: tuple[int, int],
    last_month: int = 12,
    first_month: int = 1,
) -> str | None:
    """A realistic value for the string field `n` of `entity`, or None when the field has no vocabulary here.

    `row` holds the values generated so far (a breed follows the species, a mime type the file name);
    periods fall between `first_month` of years[0] and `last_month` of years[1].
    """
    if "currency" in n:
        return currency(rng)
    if n in ("building", "wing", "building_name"):
        return pick(rng, WINGS) if rng.random() < 0.6 else f"Building {rng.randint(1, 12)}"
    if n in ("room", "room_number", "room_name"):
        return f"Room {rng.randint(1, 5)}{rng.randint(0, 3)}{rng.randint(1, 9)}"
    if n in ("location", "venue_name", "meeting_location"):
        return _location(entity, rng)
    if n in ("period", "budget_period", "fiscal_period", "pay_period"):
        if entity in ("pay_run", "payroll", "payslip"):
            return "{}-{:02d}".format(*month_in(rng, years, last_month, first_month))
        return budget_period(rng, years, last_month, first_month)
    if n in ("entity_type", "node_type"):  # a knowledge graph's nodes and edges
        return pick(rng, GRAPH_NODE_TYPES)
    if n in ("relation_type", "edge_type"):
        return pick(rng, GRAPH_RELATION_TYPES)
    if n in ("department", "dept", "department_name"):
        return pick(rng, DEPARTMENTS)
    if n in ("team", "team_name", "squad"):
        return pick(rng, TEAMS)
    if n in ("category", "category_name"):
        return pick(rng, CATEGORIES)
    if n == "cohort":
        return _fmt(rng, pick(rng, COHORTS))
    if n in ("tag", "tags", "label"):
        if entity in ("asset", "device", "equipment"):
            return f"AST-{rng.randint(10000, 99999)}"
        return pick(rng, TAGS)
    if n == "topic" and entity == "channel":
        return pick(rng, CHANNEL_TOPICS)
    if n == "bin" or n.endswith("_bin") or n in ("shelf", "aisle"):
        return _bin(rng)
    if n in ("symbol", "ticker", "stock_symbol"):
        return pick(rng, TICKERS)
    if n in ("unit", "units_label") and entity in ("result", "lab_result", "observation"):
        return pick(rng, LAB_UNITS)
    if n == "unit":
        return pick(rng, ["each", "box", "kg", "litre", "pack", "metre"])
    if n == "breed":
        return _breed(row, rng)
    if n == "make":
        return pick(rng, list(CAR_MODELS))
    if n == "model" and entity in ("vehicle", "car"):
        return _model(row, rng)
    if n in ("allergies", "allergy"):
        return pick(rng, ALLERGIES)
    if n in ("merchant", "merchant_name", "payee", "vendor"):
        return pick(rng, MERCHANTS)
    if n in ("commit_sha", "sha", "commit", "commit_hash"):
        return _commit_sha(rng)
    if n in ("branch", "default_branch", "source_branch", "target_branch", "head_branch", "base_branch"):
        return "main" if n in ("target_branch", "base_branch") else _branch(n, rng)
    if n in ("repository", "repo", "repo_name"):
        return f"{pick(rng, ['acme', 'northwind', 'globex', 'initech'])}/{pick(rng, REPOS)}"
    if n in ("domain", "domain_name"):
        return _domain(row, rng)
    if n in ("prefix", "key_prefix", "project_key"):
        return _prefix(row, rng)
    if n in ("bank_account", "account_number", "bank_account_number"):
        return "".join(str(rng.randint(0, 9)) for _ in range(10))
    if n in ("card_number", "library_card", "membership_number"):
        return f"{rng.randint(1000, 9999)} {rng.randint(1000, 9999)} {rng.randint(1000, 9999)}"
    if n in ("mime_type", "content_type"):
        return _mime(row, rng)
    if n in ("country",):
        return pick(rng, COUNTRIES)
    if n in ("city",):
        return city(rng)
    if n in ("state", "province"):
        return pick(rng, CITIES)[1]
    if n in ("industry",):
        return pick(rng, ["Software", "Retail", "Manufacturing", "Healthcare", "Financial Services", "Education"])
    if n in ("status", "state_name"):
        return pick(rng, STATUSES)
    if n in ("species",):
        return pick(rng, list(BREEDS))
    if n in ("language", "locale"):
        return pick(rng, ["en-US", "en-GB", "de-DE", "fr-FR", "es-ES", "ja-JP"])
    return None


# Fields holding the name of a person in some role (an author, a prescriber).
PERSON_FIELDS = frozenset(
    {
        "author",
        "owner",
        "reviewer",
        "assignee",
        "reporter",
        "requester",
        "organizer",
        "triggered_by",
        "created_by",
        "updated_by",
        "approved_by",
        "submitted_by",
        "prescriber",
        "ordering_doctor",
        "doctor",
        "physician",
        "teacher",
        "instructor",
        "manager",
        "sender_name",
        "recipient_name",
        "signer_name",
    }
)
# Entities of developer tools, whose people are usernames rather than full names.
DEV_ENTITIES = frozenset({"repository", "pull_request", "review", "run", "pipeline", "commit", "issue", "comment"})
DEV_ENTITIES |= frozenset({"post", "thread", "message", "page"})
