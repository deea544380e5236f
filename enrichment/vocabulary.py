"""Curated word lists for rule-based entity extraction (enrichment.entities).

Everything is generic: common technology names, well-known companies, a world gazetteer and the
capitalised English words that are not names. Nothing is keyed to any particular user's data.

Tables are written one entity a line, ``Display: alias, alias``. The display form's lowercase is an
alias too unless listed explicitly. An alias may carry a flag:

* ``~`` the alias is also an ordinary English word ("go", "slack", "nice"): it only counts with
  supporting context (capitalised mid-sentence, or after a trigger like "using" or "in").
* ``@`` the alias is also a given name or a very common noun ("ruby", "jordan", "chef"): it only
  counts with explicit context ("using Chef", "in Jordan"), and person rules may still claim it.
"""

from __future__ import annotations

AMBIGUOUS = "~"
NAME_LIKE = "@"


def _words(block: str) -> frozenset[str]:
    return frozenset(block.split())


def _table(block: str) -> dict[str, tuple[str, str]]:
    """Parse ``Display: alias, ~alias`` lines into alias -> (display, flag)."""
    table: dict[str, tuple[str, str]] = {}
    for line in block.strip().splitlines():
        display, _, rest = line.partition(":")
        display = display.strip()
        aliases = [a.strip() for a in rest.split(",") if a.strip()]
        if not any(a.lstrip("~@") == display.lower() for a in aliases):
            aliases.append(display.lower())
        for alias in aliases:
            flag = alias[0] if alias[0] in "~@" else ""
            table[alias.lstrip("~@")] = (display, flag)
    return table


# Display names whose plain slug would collide or vanish ("C++" and "C#" would both become "c").
SLUG_OVERRIDES = {"C++": "cpp", "C#": "csharp", "F#": "fsharp", ".NET": "dotnet", "ASP.NET": "aspnet"}

TOOLS = _table("""
Python: python3
JavaScript: js, ecmascript
TypeScript:
Java: ~java
Kotlin:
Scala:
Go: ~go, golang
Rust: ~rust
C++: cpp
C#: csharp
F#: fsharp
Ruby: @ruby
PHP:
Perl: @perl
Swift: @swift
Objective-C: objc
Julia: @julia
Haskell:
Elixir:
Erlang:
Clojure:
Lua:
Dart: @dart
Bash: @bash
Zsh:
PowerShell:
SQL:
HTML: html5
CSS: css3
Sass: scss
GraphQL:
WebAssembly: wasm
Solidity:
Fortran:
COBOL:
MATLAB:
OCaml:
Zig:
Crystal: @crystal
Ada: @ada
React: ~react, reactjs, react.js
React Native:
Vue: ~vue, vuejs, vue.js
Angular: ~angular, angularjs
Svelte:
SvelteKit:
Next.js: nextjs, next.js
Nuxt: nuxtjs, nuxt.js
Remix: @remix
Gatsby: @gatsby
Astro: @astro
Django:
Flask: ~flask
FastAPI:
Express: ~express, expressjs, express.js
NestJS:
Ruby on Rails: ~rails, rubyonrails
Laravel:
Spring Boot:
Spring: ~spring
.NET: dotnet
ASP.NET:
Blazor:
jQuery:
Tailwind CSS: tailwind, tailwindcss
Bootstrap: ~bootstrap
Redux:
Node.js: ~node, nodejs, node.js
Deno:
Bun: @bun
Vite: ~vite
Webpack:
Babel: @babel
esbuild:
Jest: ~jest
Vitest:
Mocha: @mocha
Cypress: @cypress
Playwright:
Selenium:
pytest:
JUnit:
Storybook: @storybook
Electron: @electron
Tauri:
Flutter: ~flutter
SwiftUI:
Jetpack Compose:
pandas: ~pandas
NumPy:
SciPy:
scikit-learn: sklearn
PyTorch: @torch
TensorFlow:
Keras:
JAX:
Hugging Face: huggingface
LangChain:
LlamaIndex:
spaCy:
NLTK:
OpenCV:
Matplotlib:
Plotly:
Streamlit:
Gradio:
Jupyter: jupyter notebook, jupyterlab
Celery: @celery
RQ:
SQLAlchemy:
Pydantic:
Prisma: @prisma
Sequelize:
Hibernate: @hibernate
gRPC:
Protocol Buffers: protobuf
Kafka: @kafka, apache kafka
RabbitMQ:
NATS:
ZeroMQ:
PostgreSQL: postgres, psql, postgresql
MySQL:
MariaDB:
SQLite: sqlite3
MongoDB: mongo
Redis:
Valkey:
Memcached:
Cassandra: @cassandra, apache cassandra
DynamoDB:
CockroachDB:
Elasticsearch: elastic search
OpenSearch:
Neo4j:
FalkorDB:
Qdrant:
Pinecone: @pinecone
Weaviate:
Milvus:
Chroma: chromadb
pgvector:
ClickHouse:
Snowflake: @snowflake
BigQuery:
Redshift:
Supabase:
Firebase:
Firestore:
DuckDB:
InfluxDB:
TimescaleDB:
CouchDB:
Docker: docker desktop
Docker Compose: docker-compose
Kubernetes: k8s, kube
Helm: @helm
Terraform:
Nomad: ~nomad
Consul: ~consul
Vault: ~vault, hashicorp vault
Packer: ~packer
Pulumi:
Ansible:
Chef: @chef
Puppet: @puppet
Vagrant: @vagrant
Nginx:
Caddy:
Traefik:
HAProxy:
Envoy: @envoy
Istio:
Linux:
Ubuntu:
Debian:
Fedora: @fedora
CentOS:
Arch Linux:
Alpine Linux: @alpine
macOS: osx, mac os
Windows: ~windows
iOS:
Android:
WSL:
Git:
GitHub:
GitLab:
Bitbucket:
GitHub Actions:
CircleCI:
Jenkins: @jenkins
Argo CD: argocd
AWS: amazon web services
AWS S3: s3, amazon s3
AWS EC2: ec2, amazon ec2
AWS Lambda: @lambda
Cloudflare:
Vercel:
Netlify:
Heroku:
Fly.io:
DigitalOcean:
Google Cloud: gcp, google cloud platform
Azure: ~azure, microsoft azure
OpenShift:
Prometheus: @prometheus
Grafana:
Datadog:
Sentry: @sentry
New Relic:
Splunk:
PagerDuty:
OpenTelemetry:
Slack: ~slack
Discord: ~discord
Zoom: ~zoom
Microsoft Teams: ms teams
Jira:
Confluence: ~confluence
Notion: ~notion
Linear: ~linear
Trello:
Asana:
Figma:
Miro:
Airtable:
Google Docs:
Google Sheets:
Google Drive:
Google Calendar:
Google Maps:
Gmail:
Outlook: ~outlook
Excel: ~excel, microsoft excel
PowerPoint:
VS Code: vscode, visual studio code
Visual Studio:
IntelliJ IDEA: intellij
PyCharm:
Vim:
Neovim: nvim
Emacs:
Sublime Text:
Xcode:
Android Studio:
Cursor: ~cursor
Postman: @postman
Homebrew: @brew
npm:
Yarn: @yarn
pnpm:
pip:
Poetry: @poetry
uv:
Conda: anaconda
Ruff:
mypy:
ESLint:
Prettier: @prettier
Stripe: ~stripe
Twilio:
SendGrid:
Auth0:
Okta:
ChatGPT:
GPT-4: gpt4
GPT-4o: gpt4o
Claude: @claude
Claude Code:
Gemini: ~gemini
Llama: @llama
Mistral: @mistral
GitHub Copilot: copilot
Ollama:
Midjourney:
Stable Diffusion:
DALL-E: dall-e, dalle
WordPress:
Shopify:
HubSpot:
Zapier:
n8n:
Tableau:
Power BI:
Looker:
dbt:
Airflow: apache airflow
Spark: ~spark, apache spark
Hadoop:
Flink:
Databricks:
Chrome: ~chrome, google chrome
Firefox:
Safari: @safari
Obsidian: @obsidian
Evernote:
Todoist:
Dropbox:
1Password:
Spotify:
YouTube:
WhatsApp:
Telegram: @telegram
Instagram:
Facebook:
LinkedIn:
Reddit:
TikTok:
iPhone:
iPad:
MacBook:
Apple Watch:
Raspberry Pi:
Arduino:
Kindle: @kindle
Garmin:
Strava:
Duolingo:
""")

COMPANIES = _table("""
Google: ~alphabet
Microsoft:
OpenAI:
Anthropic:
Amazon: ~amazon
Apple: ~apple
Meta: ~meta
Netflix:
NVIDIA:
Intel:
AMD:
IBM:
Oracle: ~oracle
Salesforce:
Adobe:
Tesla: @tesla
SpaceX:
Uber: ~uber
Lyft:
Airbnb:
PayPal:
Samsung:
Sony:
Nintendo:
Huawei:
Xiaomi:
Alibaba:
Tencent:
Baidu:
ByteDance:
DeepMind: google deepmind
Mistral AI:
Cohere: ~cohere
Atlassian:
Cisco:
Dell: @dell
Lenovo:
Accenture:
Deloitte:
McKinsey:
PwC:
KPMG:
Goldman Sachs:
JPMorgan: jp morgan, jpmorgan chase
Morgan Stanley:
Walmart:
Costco:
Starbucks:
Coca-Cola:
Nike: ~nike
Disney: @disney
Boeing:
Airbus:
Toyota:
BMW:
Volkswagen:
Siemens:
SAP:
Red Hat:
Mozilla:
Wikipedia:
NASA:
NHS:
Harvard:
Stanford:
MIT:
Yale:
Princeton:
Caltech:
UCLA:
Twitter:
""")

PLACES = _table("""
Afghanistan:
Albania:
Algeria:
Argentina:
Armenia:
Australia:
Austria:
Azerbaijan:
Bahamas:
Bahrain:
Bangladesh:
Belarus:
Belgium:
Bolivia:
Bosnia:
Brazil:
Bulgaria:
Cambodia:
Cameroon:
Canada:
Chad: @chad
Chile: ~chile
China:
Colombia:
Congo:
Costa Rica:
Croatia:
Cuba:
Cyprus:
Czech Republic: czechia
Denmark:
Dominican Republic:
Ecuador:
Egypt:
El Salvador:
England:
Estonia:
Ethiopia:
Fiji:
Finland:
France:
Georgia: @georgia
Germany:
Ghana:
Greece:
Greenland:
Guatemala:
Haiti:
Honduras:
Hungary:
Iceland:
India:
Indonesia:
Iran:
Iraq:
Ireland:
Israel:
Italy:
Jamaica:
Japan:
Jordan: @jordan
Kazakhstan:
Kenya:
Kosovo:
Kuwait:
Laos:
Latvia:
Lebanon:
Libya:
Lithuania:
Luxembourg:
Madagascar:
Malaysia:
Maldives:
Mali:
Malta:
Mexico:
Moldova:
Monaco:
Mongolia:
Montenegro:
Morocco:
Mozambique:
Myanmar:
Namibia:
Nepal:
Netherlands: @holland, the netherlands
New Zealand:
Nicaragua:
Nigeria:
North Korea:
North Macedonia:
Norway:
Oman:
Pakistan:
Palestine:
Panama:
Paraguay:
Peru:
Philippines:
Poland:
Portugal:
Puerto Rico:
Qatar:
Romania:
Russia:
Rwanda:
Saudi Arabia:
Scotland:
Senegal:
Serbia:
Singapore:
Slovakia:
Slovenia:
Somalia:
South Africa:
South Korea: korea
Spain:
Sri Lanka:
Sudan:
Sweden:
Switzerland:
Syria:
Taiwan:
Tanzania:
Thailand:
Tunisia:
Turkey: ~turkey, turkiye
Uganda:
Ukraine:
United Arab Emirates: uae
United Kingdom: uk, u.k, britain, great britain
United States: usa, u.s, u.s.a, america, united states of america
Uruguay:
Uzbekistan:
Venezuela:
Vietnam:
Wales:
Yemen:
Zambia:
Zimbabwe:
Alabama:
Alaska:
Arizona:
Arkansas:
California:
Colorado:
Connecticut:
Delaware:
Florida:
Hawaii:
Idaho:
Illinois:
Indiana:
Iowa:
Kansas:
Kentucky:
Louisiana:
Maine:
Maryland:
Massachusetts:
Michigan:
Minnesota:
Mississippi:
Missouri:
Montana: @montana
Nebraska:
Nevada:
New Hampshire:
New Jersey:
New Mexico:
New York:
North Carolina:
North Dakota:
Ohio:
Oklahoma:
Oregon:
Pennsylvania:
Rhode Island:
South Carolina:
South Dakota:
Tennessee:
Texas:
Utah:
Vermont:
Virginia: @virginia
Washington: @washington
Washington, D.C.: washington dc, washington d.c
West Virginia:
Wisconsin:
Wyoming:
Ontario:
Quebec:
British Columbia:
Alberta:
Bavaria:
Catalonia:
New York City: nyc
Los Angeles:
Chicago:
Houston: @houston
Phoenix: @phoenix
Philadelphia: philly
San Antonio:
San Diego:
Dallas: @dallas
San Jose:
Austin: @austin
Jacksonville:
San Francisco:
Seattle:
Denver: @denver
Boston:
Nashville:
Detroit:
Portland:
Las Vegas: vegas
Memphis:
Atlanta:
Miami:
Baltimore:
Milwaukee:
Minneapolis:
Tampa:
New Orleans:
Cleveland: @cleveland
Pittsburgh:
Cincinnati:
Kansas City:
St. Louis: st louis, st. louis, saint louis
Salt Lake City:
Honolulu:
Sacramento:
Oakland:
Raleigh:
Charlotte: @charlotte
Orlando: @orlando
Brooklyn: @brooklyn
Manhattan:
Toronto:
Montreal:
Vancouver:
Calgary:
Ottawa:
Edmonton:
Mexico City:
Guadalajara:
Havana:
Bogotá: bogota
Lima: ~lima
Santiago: @santiago
Buenos Aires:
São Paulo: sao paulo
Rio de Janeiro: rio
London:
Manchester:
Liverpool:
Birmingham:
Edinburgh:
Glasgow:
Dublin:
Belfast:
Cardiff:
Bristol:
Oxford:
Cambridge:
Paris:
Lyon:
Marseille:
Nice: ~nice
Bordeaux:
Berlin:
Munich:
Hamburg:
Frankfurt:
Cologne:
Stuttgart:
Düsseldorf: dusseldorf
Vienna:
Zurich: zürich
Geneva:
Amsterdam:
Rotterdam:
Brussels:
Madrid:
Barcelona:
Valencia:
Seville:
Lisbon:
Porto:
Rome:
Milan:
Naples:
Florence: @florence
Venice:
Athens:
Istanbul:
Prague:
Budapest:
Warsaw:
Kraków: krakow
Bucharest:
Sofia: @sofia
Belgrade:
Zagreb:
Copenhagen:
Stockholm:
Oslo:
Helsinki:
Reykjavik:
Tallinn:
Riga:
Vilnius:
Kyiv: kiev
Moscow:
Saint Petersburg: st petersburg, st. petersburg
Tbilisi:
Cairo:
Casablanca:
Marrakech:
Lagos:
Accra:
Nairobi:
Addis Ababa:
Johannesburg:
Cape Town:
Dubai:
Abu Dhabi:
Doha:
Riyadh:
Tel Aviv:
Jerusalem:
Beirut:
Tehran:
Karachi:
Lahore:
Delhi: new delhi
Mumbai:
Bangalore: bengaluru
Chennai:
Hyderabad:
Kolkata:
Dhaka:
Kathmandu:
Beijing:
Shanghai:
Shenzhen:
Hong Kong:
Taipei:
Tokyo:
Osaka:
Kyoto:
Seoul:
Busan:
Kuala Lumpur:
Jakarta:
Bali:
Bangkok:
Manila:
Hanoi:
Ho Chi Minh City: saigon
Sydney: @sydney
Melbourne:
Brisbane:
Perth:
Auckland:
Europe:
Asia:
Africa:
North America:
South America:
Latin America:
Middle East:
Scandinavia:
Antarctica:
Caribbean:
Silicon Valley:
Bay Area:
Midwest:
""")

# Tools whose vendor shares the product's name. They are tools by default ("we use Datadog") and
# organisations in a company context ("works at Shopify", "Stripe announced", "a contract with GitLab").
PRODUCT_COMPANIES = _words("""
datadog stripe shopify cloudflare gitlab github bitbucket vercel netlify heroku digitalocean twilio
figma okta pagerduty supabase slack notion atlassian sentry snowflake
""")

# A capitalised token ending one of these (with a name before it) makes an organisation.
ORG_SUFFIXES = _words("""
inc corp corporation llc ltd gmbh ag plc labs lab university college institute foundation bank
hospital clinic school academy company group partners capital ventures technologies solutions
industries holdings association society council agency ministry department museum studios studio
airlines motors pharmaceuticals consulting collective club federation commission
""")
# These head an organisation on their own when followed by "of X": "University of Michigan".
ORG_OF_HEADS = _words("""
university bank institute college school museum department ministry academy society association
federation council church
""")
PLACE_SUFFIXES = _words("""
city street st avenue ave road rd boulevard blvd park lake mountain mountains beach county island
islands river valley bay falls canyon forest square bridge heights hills harbor harbour district
village province coast peninsula desert reef springs plaza trail airport hollow
""")
PLACE_PREFIXES = _words("lake mount mt fort cape isle")

# Capitalised words that are never names: sentence starters, pronouns, interjections, time words,
# greetings, kinship terms, generic nouns, status words and nationality/language adjectives.
STOPWORDS = _words("""
a about above after again against ago ah aha ahh all almost alone along already alright also
although always am among an and another any anybody anyone anything anyway anyways anywhere
apparently are aren't around as at aw aww away awesome back basically be because been before being
below besides best better between both brb btw but by bye can can't cannot certainly cheers clearly
come congrats congratulations cool could couldn't dear definitely did didn't do does doesn't doing
don't done down during each eh either else enough especially even ever every everybody everyone
everything everywhere exactly except fine finally first following for from further furthermore
generally gee gosh got great guess had hah haha hahaha has hasn't have haven't having he he'd he'll
he's hello hence her here here's hers herself hey hi him himself his hm hmm honestly hooray how
however huh i i'd i'll i'm i've if imo in indeed instead into is isn't it it'd it'll it's its
itself just kinda later least less let let's lets like likely lol lots luckily maybe me meanwhile
might mine more moreover most mostly much must my myself nah naturally near nearly neither never
nevertheless next nice no nobody none nope nor not nothing now nowhere of off oh ok okay on once
one only oops or other others otherwise ouch our ours ourselves out over overall own perhaps please
plus possibly pretty probably quite rather re really regardless right same see seriously several
shall she she'd she'll she's should shouldn't since so some somebody someone something sometimes
somewhat somewhere soon sorry still such sure sweet than thank thanks thankfully that that's the
their theirs them themselves then there there's therefore these they they'd they'll they're they've
thing things this those though thus thx til till to together too totally truly ugh um umm under
unfortunately unless unlike until up upon us usually very via wait was wasn't we we'd we'll we're
we've well went were weren't what what's whatever when whenever where whereas wherever whether
which while who who's whoever whole whom whose why will with within without won't wow would
wouldn't yay yeah yep yes yet you you'd you'll you're you've your yours yourself yourselves yup
today tomorrow tonight yesterday tho anyhow mhm omg wtf idk tbh fyi asap tbd eta eod imho afaik np
ty pls plz xoxo lmao rofl ahead also agreed absolutely
woah whoa woohoo yo glad anytime hiya heya howdy sup bravo yikes geez jeez phew ooh oooh yess
zero two three four five six seven eight nine ten eleven twelve twenty hundred thousand million
billion second third fourth fifth last
monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat
weekend weekday weekdays weekends
january february march april may june july august september october november december jan feb mar
apr jun jul aug sep sept oct nov dec
christmas xmas easter thanksgiving halloween hanukkah chanukah diwali ramadan eid passover kwanzaa
valentine valentines new-year nye spring summer winter autumn fall
greetings morning evening afternoon night goodnight welcome regards sincerely love
mom mum mommy mummy mama ma dad daddy papa pa mother father grandma grandpa granny grandmother
grandfather nana nan gramps grandad auntie aunt uncle sis bro brother sister son daughter baby babe
honey sweetie darling buddy dude bud man mate guys folks fam family kids kid hubby wifey wife
husband boss friend friends bestie
people person user users human assistant ai bot system admin customer client guest team teammate
member members staff sir madam manager
note notes todo update updates summary decision decisions preference preferences idea ideas
question questions answer answers issue issues bug bugs error errors warning warnings info debug fix
fixes feature features task tasks step steps phase goal goals plan plans agenda action actions item
items status meeting meetings call sync standup retro review reviews project projects repo
repository tool tools app apps library service services api apis database server code data file
files folder page pages document docs doc report reports test tests version release releases deploy
deployment build branch commit pr prs ticket tickets sprint roadmap milestone deadline launch demo
design draft spec specs log logs config settings setup install installation usage example examples
reminder reminders important urgent critical context background overview details detail description
title subject topic category tag tags label labels type types level priority high low medium old
final previous current default main general misc miscellaneous personal work home school college
office travel trip vacation holiday birthday party dinner lunch breakfast coffee tea day week month
year time date event events news story stories book books movie movies music song songs game games
show shows video videos photo photos picture pictures art life world health fitness diet food
recipe recipes budget money finance finances shopping list lists chapter section part figure table
appendix introduction conclusion result results method methods marketing sales engineering
research operations ops support frontend backend mobile web platform infra infrastructure
migration redesign roadmap q&a faq
exception failed failure fail fatal panic traceback warn success succeeded successful pending
running stopped started complete completed timeout denied forbidden unauthorized invalid missing
null nil undefined nan true false deprecated fixme hack xxx wip
english spanish french german italian portuguese chinese mandarin cantonese japanese korean russian
arabic hindi urdu bengali dutch swedish norwegian danish finnish polish czech greek turkish hebrew
persian farsi thai vietnamese indonesian filipino tagalog swahili latin american british european
asian african canadian mexican indian brazilian australian irish scottish welsh israeli iranian
nigerian kenyan egyptian christian muslim jewish buddhist hindu catholic protestant

god lord internet wifi wi-fi email e-mail online offline phd md mba bsc msc ceo cto cfo coo vp hr qa
ui ux pm pr mvp id url ip os sdk ide cli gui llm llms ml devops covid covid-19 tv dm dms ok
saas paas iaas pros cons tldr ps nb edit output input response request prompt query source sources
fintech startup startups
""")

# Ordinary capitalised words: block a token from joining a multi-word name ("the Annual Report")
# and from becoming a person on weak evidence.
COMMON_WORDS = _words("""
able account active activity address advice age agent air amazing analysis animal annual apartment
area article artist attention available award bad bag ball band bar base basic beautiful bed beer
big bike bird black blog blue board boat body bonus box boy brand bread break bright brown business
busy buy cake camera camp campaign car card care career case cash cat center centre chair challenge
change channel chat check cheese chicken child children church city class classic clean clear
climate close cloud coach coast cold collection color colour community company conference content
contract control cook corner cost country course court cover creative credit culture cup daily
dance dark deal deep degree delivery department desk development digital direct director dog door
double dream dress drink drive early earth east easy economy education electric energy engine entry
environment equipment estate exam experience expert face fact fair fan farm fashion fast feedback
field film fire fish flight floor flow focus football force form free fresh front fruit full fun
fund future garden gas gift girl glass global gold golden good government grand green ground group
growth guide gym hair half hall hand happy hard head heart heat help history hospital hot hotel
house ice image impact income index industry inside insight interest international interview job
join journey junior key kitchen land language large late law lead leader learning left legal letter
light line link little live local long lost lucky machine magic mail major market master match media
medical memory message middle mind mini mission modern moment motor mountain mouse national natural
nature network north number ocean offer official open order original outdoor owner paper parent
park partner pass past path pay peace phone physical piano pink place planet plant play player
point police policy pool power practice premium president press price prime private process product
production professional program progress property public pure purple quality quest quick quiet race
radio rain range rate reading real record red region rest restaurant return river road rock room
round rule run safe safety sale save science screen sea search season secret security senior series
session share shop short side sign silver simple single site size skill sky small smart social soft
solution sound source south space special speed sport sports square stage standard star start state
station stock stone store strategy street strong student studio study style super surface talk
target tax teacher tech technology term text theory thought top total tour tower town track trade
traffic training tree trust truth union unit universe university upper urban value view village
vision visit voice wall war water wave way weather wedding west white wild window wine woman women
wood word workshop writing yellow young youth zone
pacific atlantic northwest northeast southwest southeast northern southern eastern western central
new add ask build call consider create ensure find get give go keep learn make move need read remember
remove send set stop take try use watch write avoid prefer switch switched using used moved
""")

# Plural and work nouns that open sentences in technical notes ("Benchmarks ran ...", "Builds broke").
# They are never names; a sentence-initial capitalised plural outside this list is still checked by
# shape (see GIVEN_NAMES_S).
COMMON_NOUNS = _words("""
benchmarks benchmark tests deploys deployments logs metrics builds releases migrations users customers
servers clients incidents outages alerts dashboards pipelines jobs workers queries requests responses
rollouts upgrades changes numbers graphs charts backups snapshots containers pods nodes clusters
engineers developers designers managers stakeholders vendors partners teams reviewers traces spans
latencies queues caches connections retries timeouts errors crashes regressions experiments
runs checks scans audits patches hotfixes commits merges branches endpoints schemas indexes indices
tables rows records events messages payloads sessions tokens credentials secrets keys certificates
workloads instances replicas shards partitions volumes disks costs invoices contracts docs notes specs
dependencies packages modules plugins libraries frameworks services apis tickets sprints standups
interviews candidates hires students attendees visitors participants volunteers
""")
# Given names ending in "s": a sentence-initial capitalised word ending in "s" is read as a plural
# noun ("Benchmarks", "Deploys") unless it is one of these or carries strong person evidence.
GIVEN_NAMES_S = _words("""
james charles thomas nicholas nicolas lucas jesus carlos marcus markus douglas frances agnes doris
iris lois dolores mercedes chris lewis louis francis dennis curtis travis jonas elias tobias andreas
matthias mathias niklas nikolas klaus hans jules miles myles giles moses amos cyrus julius marius
rufus angus silas thaddeus alexis phyllis gladys janis ines yves ross wes les jess tess bess cass
russ gus demetrius dimitris nikos yannis kostas vasilis andres matias tomas lars
anders mattias aeneas achilles hercules zeus apollos ulysses bartholomew cornelius ignatius
lazarus linus remus romulus titus darius octavius augustus marcellus cassius brutus boris
""")
# Verbs after a name that make it a person even where shape or vocabulary says otherwise.
SPEECH_VERBS = _words("""
said says told tells asked asks replied replies answered answers wrote writes thinks thought
mentioned mentions suggested suggests explained explains texted emailed messaged
""")
# Lowercase words that make a text technical, so that "Helm" or "Kafka" there is the tool.
TECH_WORDS = _words("""
deploy deployed deploying deployment deployments cluster clusters server servers pipeline pipelines
repo repos repository codebase api apis database databases latency config configs container
containers pod pods chart charts helm metrics dashboard dashboards staging production prod rollout
endpoint endpoints schema schemas queue queues broker brokers consumer consumers scrape scraped
scraping ci commit commits backend frontend microservice microservices infra infrastructure runbook
incident outage alerts alerting build builds upgrade upgraded upgrading migration migrations
release releases kubernetes k8s docker terraform node nodes replica replicas throughput p95 p99
""")

# Tokens that end a name-like class or code symbol rather than a person's name.
CLASS_SUFFIXES = tuple(
    _words("""
    Handler Manager Service Controller Factory Helper Provider Adapter Builder Wrapper Repository
    Client Server Util Utils Impl Mixin Config Exception Error Warning Interface Module Component
    Test Spec
    """)
)

# Verbs that follow a person's name often and a thing's name rarely.
PERSON_VERBS = _words("""
said says told tells asked asks thinks thought wants wanted helped helps mentioned mentions
suggested suggests recommended recommends likes liked loves loved hates hated prefers preferred
feels felt believes believed replied responded wrote writes texted emailed messaged called calls
met meets laughed smiled cried agreed disagreed promised invited visited decided explained shared
noticed went goes came comes lives lived works worked joined left got gets bought sent gave
introduced married adopted graduated started finished celebrated painted cooked ran runs set led
fixed reviewed merged pushed approved owns owned made found booked organized organised planned signed
hired quit took brought drove baked paid picked chose proposed presented built
""")
# Verbs right before a name: "met Alice", "told Sam".
PERSON_TRIGGERS = _words("""
met meet meeting told tell asked ask thank cc ping pinged invited emailed texted messaged call
text email remind reminded
""")
# Greetings and thanks before a vocative name: "hey Sam", "thanks, Bob".
GREETINGS = _words("hi hey hello dear thanks congrats congratulations bye")
# Words before "X and Y" that make the pair things or places rather than people: "to Nomad and Consul".
THING_PREPOSITIONS = _words("to from in at on for of about like than into onto via using use used")
# "called X" names a person only after a caller; "a tool called X" does not.
CALLERS = _words("i we he she they you just finally then also later and")
# Verbs that make a following "to X" address a person: "talked to Bob".
TALK_VERBS = _words("""
talked spoke speaking talking wrote replied introduced married engaged said reached sent gave
listened listen explained
""")
TITLES = _words("dr mr mrs ms miss mx prof professor sir dame coach captain capt officer judge pastor rev")
RELATIONS = _words("""
friend buddy pal colleague coworker co-worker boss manager teammate sister brother wife husband
partner girlfriend boyfriend fiance fiancé fiancee fiancée son daughter mom mum mother dad father
cousin aunt uncle niece nephew grandma grandpa grandmother grandfather neighbor neighbour roommate
flatmate mentor therapist doctor teacher professor student intern client landlord
""")
# Words after "X's" that make it "X is/has" rather than a possessive: "Yoga's been great".
CONTRACTION_FOLLOWERS = _words("""
been a an the so such not just also still going gonna got really always mostly definitely pretty
very super like more all totally great good fine awesome amazing fun my your our his her their
""")
# Abbreviations whose trailing dot does not end a sentence.
ABBREVIATIONS = _words("dr mr mrs ms prof st mt ft jr sr vs e.g i.e approx incl no fig dept")
NAME_PARTICLES = _words("van von de da di del della der den du la le bin ibn al el")

# Words before an unknown capitalised name that make it a technology.
TOOL_TRIGGERS = _words("using use uses used via adopted adopting installed installing vs versus")
# Verbs that make "to/from X" a technology: "switched to X", "migrated from X".
SWITCH_VERBS = _words("""
switched switch switching migrated migrate migrating migration upgraded upgrade ported port porting
converted moving
""")
# Verbs that make "in X" a language: "written in X".
WRITTEN_VERBS = _words("written wrote write writing coded code programming implemented rewritten rewrote")
# Verbs that make "with/on X" a technology: "built with X", "deployed on X".
BUILT_VERBS = _words(
    "built build building made deployed deploy deploying hosted hosting running runs replaced"
)

# Words before a place name that make an ambiguous gazetteer entry a place: "in Jordan".
PLACE_PREPOSITIONS = _words("""
in from to at near visited visit visiting visits around across toward towards outside through
throughout into leaving reached arrived explored exploring returned flew drove moved
""")
# "works at X", "internship at X": words that make a following "at X" an employer.
EMPLOYMENT_WORDS = _words("""
work works worked working job jobs intern interned interning internship engineer developer manager
designer researcher scientist analyst consultant employed position role offer interview interviewed
interviewing hired career started employee
""")
# "CEO of X", "founder of X".
LEADER_WORDS = _words("ceo cto cfo coo founder cofounder co-founder president director head vp chairman")
# Words before a known company that make it an employer rather than a product.
ORG_CONTEXT = _words("at joined joining join left leaving")
# "<word> with X" and "<word> by X": a deal or an acquisition names a company.
DEAL_WORDS = _words("""
contract contracts deal deals partnership partnerships agreement agreements partnered partnering
negotiation negotiations negotiating signed contracted
""")
ACQUIRED_WORDS = _words("acquired bought funded backed owned sponsored purchased")
# "the team at X", "folks from X": groups of people belong to a company.
GROUP_WORDS = _words("""
team teams folks people engineers developers staff employees someone somebody colleagues friends
recruiter recruiters
""")
# Words after a known company name that make it the company: "Stripe announced", "the Datadog team".
ORG_VERBS = _words("""
announced announces acquired acquires raised raises laid hired hires launched launches sued
reported reports partnered ipo went-public
""")
ORG_NOUNS = _words("""
team teams ceo cto cfo founder founders employees staff headquarters hq office offices contract
contracts deal partnership acquisition recruiter recruiters layoffs stock shares earnings
""")
# Fused endings of invented company names: "Initech", "Microsoft", "Globalware", "Shopify".
COMPANY_ENDINGS = tuple(_words("tech soft corp ware labs logic systems tronics tronic dyne ify mart works"))

# Lowercase prefixes of camelCase code identifiers ("useState", "getUser"), not product names.
CODE_PREFIXES = _words("""
get set use is has on to do can should handle make with from add remove update create delete fetch
load save init run parse render my
""")
# Lowercase words that are usually code identifiers when put in backticks, not product names.
CODE_WORDS = _words("""
self this cls args kwargs main init config data value values key keys item items id name type list
dict str int float bool len print return import def class async await foo bar baz tmp src lib
index utils app env true false null none nil
""")
# Prefixes of versioned tokens that are not products: "covid-19", "top-10", "utf-8".
VERSION_STOP = _words("""
covid sars top day days week weeks phase step level sprint page section chapter item part version
rev iso rfc utf sha mid pre post non over under year class grade size issue ticket bug round
""")

# Head nouns of "a <noun> called X" and the kind X becomes.
_NAMED_HEAD_LINES = """
project: project repo repository codebase
tool: app library package tool framework plugin extension service database
organization: company startup firm organization organisation nonprofit
place: town city village neighborhood neighbourhood
"""
NAMED_HEADS = {
    head: kind
    for kind, _, heads in (line.partition(":") for line in _NAMED_HEAD_LINES.strip().splitlines())
    for head in heads.split()
}
